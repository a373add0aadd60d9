/* taxi_gen.c -- deterministic yellow trips for January to June 2024.
 *
 * Writes yellow_trips rows in PostgreSQL's COPY text format on stdout, the
 * same rows for the same --seed and --trips on every machine (splitmix64,
 * integer arithmetic wherever it decides a value). Realism, tuned against
 * the TLC data Straum's own benchmark used:
 *   - volume: a daily rhythm (quiet at 4 am, busy 6-8 pm New York time) and
 *     a weekly one (Friday and Saturday nights, slow Sunday mornings);
 *   - pickup zones: Manhattan-heavy, Zipf over a ranked list led by Midtown,
 *     the Upper East Side and the airports; dropoffs spread wider;
 *   - a few zone ids outside the zone table (0 and 266);
 *   - payment types 0-5, card most;
 *   - fares with two decimals, from distance and time, including zeros and
 *     negatives (refunds); tips mostly on card.
 * --count-cells prints, instead of rows, the distinct (hour, pickup zone,
 * payment) and (hour, dropoff zone) pairs the trips and dropoffs views would
 * keep at their hour width: what the zone skews are tuned with. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL_SCALE_TRIPS 20332093LL
#define START_UNIX 1704067200LL /* 2024-01-01 00:00 UTC */
#define HOURS (182 * 24)        /* to 2024-07-01 */
#define NY_OFFSET_H (-5)        /* rhythm in New York winter time; close enough in summer */

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform(void) { return (double)(next_u64() >> 11) * 0x1.0p-53; }

/* ---- Zones ----------------------------------------------------------------- */

/* Pickup zones in the order of their real volume, busiest first; the rest of
 * 1..263 follow in id order. */
static const int pickup_rank[] = {
    161, 237, 132, 236, 162, 230, 186, 142, 138, 170, 163, 239, 48,  68,  234, 141, 79,
    107, 140, 43,  249, 100, 113, 164, 90,  263, 229, 137, 262, 233, 231, 246, 114, 151,
    125, 87,  166, 50,  158, 13,  143, 148, 144, 209, 238, 211, 24,  41,  75,  224, 74,
    42,  116, 152, 70,  7,   264, 4,   45,  88,  232, 12,  261, 146, 226, 129, 82,  145,
};

static const int dropoff_rank[] = {
    236, 237, 161, 170, 162, 230, 142, 239, 141, 163, 48,  68,  234, 79,  107, 140, 238,
    186, 263, 43,  229, 249, 262, 164, 100, 233, 75,  113, 90,  74,  41,  151, 231, 137,
    246, 24,  166, 143, 50,  114, 158, 125, 13,  87,  148, 144, 209, 132, 138, 42,  116,
    7,   226, 129, 146, 224, 244, 223, 17,  61,  112, 255, 256, 181, 97,  65,  49,  36,
};

struct zone_table {
    int ids[300];
    double cum[300];
    int n;
};

/* Zipf over the ranked ids, then every other zone of 1..263 at the tail. */
static void zones_build(struct zone_table *t, const int *rank, int nrank, double s, double c)
{
    bool used[300] = {0};
    t->n = 0;
    for (int i = 0; i < nrank; i++) {
        t->ids[t->n++] = rank[i];
        used[rank[i]] = true;
    }
    for (int z = 1; z <= 263; z++)
        if (!used[z])
            t->ids[t->n++] = z;
    t->ids[t->n++] = 0;   /* outside the zone table */
    t->ids[t->n++] = 266;
    double total = 0;
    for (int i = 0; i < t->n; i++) {
        double w = 1.0 / pow(i + c, s);
        if (t->ids[i] == 0 || t->ids[i] == 266)
            w *= 0.02;
        total += w;
        t->cum[i] = total;
    }
    for (int i = 0; i < t->n; i++)
        t->cum[i] /= total;
}

static int zone_pick(const struct zone_table *t)
{
    double u = uniform();
    int lo = 0, hi = t->n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->cum[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return t->ids[lo];
}

/* ---- Time ------------------------------------------------------------------- */

/* Relative volume by New York hour of day, and by weekday (0 = Monday). */
static const double hour_weight[24] = {0.55, 0.38, 0.26, 0.17, 0.12, 0.15, 0.32, 0.60,
                                       0.82, 0.88, 0.90, 0.94, 1.00, 1.02, 1.06, 1.12,
                                       1.15, 1.25, 1.38, 1.36, 1.20, 1.10, 1.02, 0.82};
static const double day_weight[7] = {0.88, 0.96, 1.04, 1.08, 1.08, 1.00, 0.86};

static double hour_cum[HOURS];

static void hours_build(void)
{
    double total = 0;
    for (int h = 0; h < HOURS; h++) {
        int local = h + NY_OFFSET_H;
        int hod = ((local % 24) + 24) % 24;
        int day = (int)((local + 240) / 24); /* days since 2023-12-22, a Friday... */
        int dow = (day + 4) % 7;             /* 2024-01-01 is a Monday */
        total += hour_weight[hod] * day_weight[dow];
        hour_cum[h] = total;
    }
    for (int h = 0; h < HOURS; h++)
        hour_cum[h] /= total;
}

static int hour_pick(void)
{
    double u = uniform();
    int lo = 0, hi = HOURS - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (hour_cum[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- A trip -------------------------------------------------------------------- */

struct trip {
    int64_t id;
    int vendor;
    int64_t pickup, dropoff; /* unix seconds */
    int passengers;          /* -1: NULL */
    int64_t distance;        /* cents of a mile */
    int pu, dropoff_zone, payment;
    int64_t fare, tip, total; /* cents */
};

static int payment_pick(void)
{
    uint64_t r = next_u64() % 1000;
    return r < 740 ? 1 : r < 900 ? 2 : r < 950 ? 0 : r < 972 ? 4 : r < 996 ? 3 : 5;
}

static void trip_make(struct trip *t, int64_t id, const struct zone_table *pu,
                      const struct zone_table *dz)
{
    t->id = id;
    t->vendor = 1 + (int)(next_u64() % 2);
    int h = hour_pick();
    t->pickup = START_UNIX + (int64_t)h * 3600 + (int64_t)(next_u64() % 3600);
    t->pu = zone_pick(pu);
    t->dropoff_zone = zone_pick(dz);
    t->payment = payment_pick();
    t->passengers = next_u64() % 20 == 0 ? -1 : 1 + (int)(next_u64() % 100 < 72 ? 0 : next_u64() % 4);
    /* Distance: mostly short hops, a long tail to the airports. */
    double miles = -log(1.0 - uniform()) * 2.4 + 0.3;
    if (t->pu == 132 || t->pu == 138)
        miles += 9 + uniform() * 8;
    t->distance = (int64_t)(miles * 100);
    int64_t minutes = 3 + (int64_t)(miles * 3.2 + uniform() * 12);
    t->dropoff = t->pickup + minutes * 60 + (int64_t)(next_u64() % 60);
    /* Fares in dimes mostly, cents sometimes; refunds and zeros. */
    int64_t fare = 300 + (int64_t)(miles * 250) + minutes * 35;
    fare = next_u64() % 4 ? fare / 10 * 10 : fare;
    uint64_t odd = next_u64() % 1000;
    if (odd < 8)
        fare = 0;
    else if (odd < 18)
        fare = -fare;
    t->fare = fare;
    t->tip = t->payment == 1 && fare > 0 ? fare * (int64_t)(10 + next_u64() % 16) / 100 : 0;
    t->total = fare + t->tip + (fare > 0 ? 250 : 0);
}

/* ---- Output ------------------------------------------------------------------- */

static void put_time(char *buf, int64_t unix)
{
    int64_t days = unix / 86400, rest = unix % 86400;
    int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
    sprintf(buf, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld+00", (long long)y, (long long)m,
            (long long)d, (long long)(rest / 3600), (long long)(rest / 60 % 60), (long long)(rest % 60));
}

static void put_cents(char *buf, int64_t c)
{
    sprintf(buf, "%s%lld.%02lld", c < 0 ? "-" : "", (long long)(llabs(c) / 100), (long long)(llabs(c) % 100));
}

static void trip_write(FILE *out, const struct trip *t)
{
    char pick[32], drop[32], dist[32], fare[32], tip[32], total[32], pass[8];
    put_time(pick, t->pickup);
    put_time(drop, t->dropoff);
    put_cents(dist, t->distance);
    put_cents(fare, t->fare);
    put_cents(tip, t->tip);
    put_cents(total, t->total);
    if (t->passengers < 0)
        strcpy(pass, "\\N");
    else
        sprintf(pass, "%d", t->passengers);
    fprintf(out, "%lld\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", (long long)t->id, t->vendor,
            pick, drop, pass, dist, t->pu, t->dropoff_zone, t->payment, fare, tip, total);
}

/* ---- Counting cells --------------------------------------------------------------- */

static uint8_t *bitset_new(size_t bits) { return calloc(bits / 8 + 1, 1); }

static bool bitset_add(uint8_t *s, size_t bit)
{
    bool had = s[bit / 8] & (1u << (bit % 8));
    s[bit / 8] |= (uint8_t)(1u << (bit % 8));
    return !had;
}

int main(int argc, char **argv)
{
    int64_t trips = FULL_SCALE_TRIPS, first_id = 1;
    uint64_t seed = 2024;
    bool count = false;
    /* Zipf exponents and offsets of the pickup and dropoff zone skews, tuned
     * with --count-cells so that at full scale the views keep about the TLC
     * data's cells: 1,178,799 trips hour cells (target 1,157,581) and 700,807
     * dropoffs hour cells (target 713,457). */
    double pu_s = 2.05, pu_c = 3.0, do_s = 1.97, do_c = 4.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--trips")) {
            trips = atoll(v);
            i++;
        } else if (!strcmp(a, "--seed")) {
            seed = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--first-id")) {
            first_id = atoll(v);
            i++;
        } else if (!strcmp(a, "--count-cells")) {
            count = true;
        } else if (!strcmp(a, "--skew")) { /* tuning: pu_s,pu_c,do_s,do_c */
            sscanf(v, "%lf,%lf,%lf,%lf", &pu_s, &pu_c, &do_s, &do_c);
            i++;
        } else {
            fprintf(stderr, "usage: taxi_gen [--trips N] [--seed S] [--first-id ID] [--count-cells]\n");
            return 2;
        }
    }
    rng_state = seed;
    hours_build();
    struct zone_table pu, dz;
    zones_build(&pu, pickup_rank, (int)(sizeof pickup_rank / sizeof *pickup_rank), pu_s, pu_c);
    zones_build(&dz, dropoff_rank, (int)(sizeof dropoff_rank / sizeof *dropoff_rank), do_s, do_c);
    uint8_t *trip_cells = count ? bitset_new((size_t)HOURS * 300 * 6) : NULL;
    uint8_t *drop_cells = count ? bitset_new((size_t)HOURS * 300) : NULL;
    int64_t ntrip_cells = 0, ndrop_cells = 0;
    static char outbuf[1 << 20];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    for (int64_t i = 0; i < trips; i++) {
        struct trip t;
        trip_make(&t, first_id + i, &pu, &dz);
        if (!count) {
            trip_write(stdout, &t);
            continue;
        }
        size_t hour = (size_t)((t.pickup - START_UNIX) / 3600);
        ntrip_cells += bitset_add(trip_cells, (hour * 300 + (size_t)t.pu) * 6 + (size_t)t.payment);
        ndrop_cells += bitset_add(drop_cells, hour * 300 + (size_t)t.dropoff_zone);
    }
    if (count)
        printf("trips %lld: trips hour cells %lld (target 1157581), dropoffs hour cells %lld "
               "(target 713457)\n", (long long)trips, (long long)ntrip_cells, (long long)ndrop_cells);
    free(trip_cells);
    free(drop_cells);
    return fflush(stdout) ? 1 : 0;
}
