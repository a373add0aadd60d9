/* tz.c -- TZif zone files: transitions and offsets.
 *
 * Reads the version 2+ (64-bit) data block of a TZif file: transition
 * instants and the UTC offset in force after each. Debian's tzdata ships
 * "fat" files whose transitions run to 2037, so the POSIX rule in the file's
 * footer is not needed for the years Straum serves; after the last
 * transition the last offset stays in force. Zones are loaded once and kept
 * (a handful per process), behind a mutex only on first load. */
#include "base/bytes.h"
#include "engine/engine.h"
#include "engine/tz.h"
#include "sql/sql.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tz {
    char name[128];
    int n;            /* transitions */
    int64_t *at;      /* transition instants, seconds since 1970, ascending */
    int32_t *offset;  /* offset in force from at[i] on */
    int32_t initial;  /* offset before the first transition */
    struct tz *next;
};

static struct tz *zones;
static pthread_mutex_t zones_lock = PTHREAD_MUTEX_INITIALIZER;

struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
};

static int read_counts(const unsigned char *p, size_t len, struct tzif_counts *c)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0)
        return -1;
    c->isut = be_load_u32(p + 20);
    c->isstd = be_load_u32(p + 24);
    c->leap = be_load_u32(p + 28);
    c->time = be_load_u32(p + 32);
    c->type = be_load_u32(p + 36);
    c->chars = be_load_u32(p + 40);
    if (c->time > 100000 || c->type == 0 || c->type > 256 || c->leap > 10000 || c->chars > 65536)
        return -1;
    return 0;
}

static size_t block_bytes(const struct tzif_counts *c, int timesize)
{
    return (size_t)c->time * (size_t)timesize + c->time + (size_t)c->type * 6 + c->chars +
           (size_t)c->leap * (size_t)(timesize + 4) + c->isstd + c->isut;
}

/* Parses the file's 64-bit block (or the 32-bit one of a version 1 file). */
static int parse(struct tz *z, const unsigned char *d, size_t len)
{
    struct tzif_counts c;
    if (read_counts(d, len, &c))
        return -1;
    int timesize = 4;
    size_t off = 44;
    if (d[4] >= '2') {
        off += block_bytes(&c, 4);
        if (off > len || read_counts(d + off, len - off, &c))
            return -1;
        off += 44;
        timesize = 8;
    }
    if (off + block_bytes(&c, timesize) > len)
        return -1;
    const unsigned char *times = d + off, *idx = times + (size_t)c.time * (size_t)timesize,
                        *types = idx + c.time;
    z->n = (int)c.time;
    z->at = calloc(c.time + 1, sizeof *z->at);
    z->offset = calloc(c.time + 1, sizeof *z->offset);
    if (!z->at || !z->offset)
        return -1;
    for (uint32_t i = 0; i < c.time; i++) {
        z->at[i] = timesize == 8 ? be_load_i64(times + 8 * i) : be_load_i32(times + 4 * i);
        if (idx[i] >= c.type)
            return -1;
        z->offset[i] = be_load_i32(types + 6 * idx[i]);
    }
    /* Before the first transition: the first non-daylight type, as zic writes it. */
    z->initial = be_load_i32(types);
    for (uint32_t t = 0; t < c.type; t++)
        if (!types[6 * t + 4]) {
            z->initial = be_load_i32(types + 6 * t);
            break;
        }
    return 0;
}

static struct tz *load(const char *name, char *err, size_t errlen)
{
    const char *dir = getenv("TZDIR");
    char path[512];
    if (strstr(name, "..") || name[0] == '/' || strlen(name) >= sizeof ((struct tz *)0)->name) {
        snprintf(err, errlen, "time zone \"%s\" is not a zone name", name);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "time zone \"%s\" is not recognized", name);
        return NULL;
    }
    unsigned char *d = malloc(1 << 20);
    size_t len = d ? fread(d, 1, 1 << 20, f) : 0;
    fclose(f);
    struct tz *z = calloc(1, sizeof *z);
    if (!d || !z || parse(z, d, len)) {
        snprintf(err, errlen, "time zone \"%s\" could not be read", name);
        free(d);
        if (z) {
            free(z->at);
            free(z->offset);
        }
        free(z);
        return NULL;
    }
    free(d);
    snprintf(z->name, sizeof z->name, "%s", name);
    return z;
}

const struct tz *tz_get(const char *name, char *err, size_t errlen)
{
    if (!name || !*name)
        name = "UTC";
    pthread_mutex_lock(&zones_lock);
    struct tz *z = zones;
    while (z && strcmp(z->name, name) != 0)
        z = z->next;
    if (!z && (z = load(name, err, errlen))) {
        z->next = zones;
        zones = z;
    }
    pthread_mutex_unlock(&zones_lock);
    return z;
}

/* The index of the first transition after second s (tz->n when none). */
static int first_after(const struct tz *tz, int64_t s)
{
    int lo = 0, hi = tz->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (tz->at[mid] <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int64_t floor_seconds(int64_t utc_us)
{
    return utc_us >= 0 ? utc_us / 1000000 : -((-utc_us + 999999) / 1000000);
}

int32_t tz_offset_at(const struct tz *tz, int64_t utc_us)
{
    int lo = first_after(tz, floor_seconds(utc_us));
    return lo == 0 ? tz->initial : tz->offset[lo - 1];
}

int64_t tz_next_transition(const struct tz *tz, int64_t utc_us)
{
    int i = first_after(tz, floor_seconds(utc_us));
    /* Transitions lie on whole seconds, within what TZif files hold. */
    return i < tz->n && tz->at[i] < INT64_MAX / 1000000 ? tz->at[i] * 1000000 : INT64_MAX;
}

int64_t tz_local_to_utc(const struct tz *tz, int64_t local_us)
{
    const int64_t day = 86400LL * 1000000;
    int32_t before = tz_offset_at(tz, local_us - day), after = tz_offset_at(tz, local_us + day);
    int64_t t_before = local_us - (int64_t)before * 1000000;
    int64_t t_after = local_us - (int64_t)after * 1000000;
    bool ok_before = tz_offset_at(tz, t_before) == before;
    bool ok_after = tz_offset_at(tz, t_after) == after;
    if (ok_before && ok_after)
        return t_before > t_after ? t_before : t_after; /* twice: the later instant */
    if (ok_before)
        return t_before;
    if (ok_after)
        return t_after;
    return t_before; /* a gap: the offset in force before the change */
}

/* Two decimal digits of v < 100. */
static char *two_digits(char *p, unsigned v)
{
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
    return p + 2;
}

/* The year as printf's "%04" PRId64 writes it: at least four characters,
 * a minus sign counted among them. */
static char *put_year(char *p, int64_t y)
{
    uint64_t a = y < 0 ? -(uint64_t)y : (uint64_t)y;
    int width = y < 0 ? 3 : 4, n = 0;
    char digits[24];
    do {
        digits[n++] = (char)('0' + a % 10);
        a /= 10;
    } while (a);
    while (n < width)
        digits[n++] = '0';
    if (y < 0)
        *p++ = '-';
    while (n)
        *p++ = digits[--n];
    return p;
}

size_t tz_format(const struct tz *tz, int64_t utc_us, char *buf, size_t len)
{
    return tz_format_offset(utc_us, tz_offset_at(tz, utc_us), buf, len);
}

/* The one writer of times (no printf: answers write a time per row, and
 * printf was most of a row's cost). local is wall-clock µs; off seconds
 * east of UTC, or INT32_MIN for no offset; pg: PostgreSQL's text output
 * (DateStyle ISO: a space, offset minutes and seconds only when not zero),
 * else ISO 8601 ('T', offset minutes always). Copies what fits into buf as
 * snprintf would; returns the full length. */
static size_t format_time(int64_t local, int32_t off, bool pg, char *buf, size_t len)
{
    int64_t days = local >= 0 ? local / 86400000000LL : -((-local + 86400000000LL - 1) / 86400000000LL);
    int64_t rest = local - days * 86400000000LL;
    int64_t y;
    unsigned m, d;
    sql_civil_from_days(days, &y, &m, &d);
    int64_t secs = rest / 1000000, us = rest % 1000000;
    char out[64], *p = put_year(out, y);
    *p++ = '-';
    p = two_digits(p, m);
    *p++ = '-';
    p = two_digits(p, d);
    *p++ = pg ? ' ' : 'T';
    p = two_digits(p, (unsigned)(secs / 3600));
    *p++ = ':';
    p = two_digits(p, (unsigned)(secs / 60 % 60));
    *p++ = ':';
    p = two_digits(p, (unsigned)(secs % 60));
    if (us) {
        *p++ = '.';
        for (int k = 5; k >= 0; k--, us /= 10)
            p[k] = (char)('0' + us % 10);
        p += 6;
        if (pg) /* PostgreSQL drops the fraction's trailing zeros */
            while (p[-1] == '0')
                p--;
    }
    if (off != INT32_MIN) {
        int32_t a = off < 0 ? -off : off;
        *p++ = off < 0 ? '-' : '+';
        p = two_digits(p, (unsigned)(a / 3600));
        if (!pg || a % 3600) {
            *p++ = ':';
            p = two_digits(p, (unsigned)(a / 60 % 60));
        }
        if (a % 60) {
            *p++ = ':';
            p = two_digits(p, (unsigned)(a % 60));
        }
    }
    size_t n = (size_t)(p - out), k = len && n >= len ? len - 1 : n;
    if (len) {
        memcpy(buf, out, k);
        buf[k] = '\0';
    }
    return n;
}

size_t tz_format_offset(int64_t utc_us, int32_t off, char *buf, size_t len)
{
    return format_time(utc_us + (int64_t)off * 1000000, off, false, buf, len);
}

size_t engine_format_pg_time(int64_t local_us, int32_t off, char *buf, size_t len)
{
    return format_time(local_us, off, true, buf, len);
}
