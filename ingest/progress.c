/* progress.c -- the initial load's progress lines, bar and metrics
 * (progress.h). */
#include "ingest/progress.h"

#include "ingest/internal.h"
#include "ingest/metrics.h"

#include <stdio.h>
#include <string.h>

/* The bar is redrawn at most this often: often enough to look alive, rare
 * enough that a terminal is never the bottleneck. */
enum { BAR_INTERVAL_US = 200000 };

static const char *const phase_names[] = {"loading", "reading", "applying"};

void load_progress_begin(struct load_progress *p, const char *table, double estimated,
                         int64_t interval_us, bool tty)
{
    memset(p, 0, sizeof *p);
    p->table = table;
    p->estimated = estimated;
    p->interval_us = interval_us;
    p->tty = tty;
    atomic_flag_clear(&p->printing);
    load_progress_phase(p, LOAD_LOADING);
}

void load_progress_phase(struct load_progress *p, enum load_phase phase)
{
    int64_t now = now_usec();
    atomic_store(&p->phase, (int)phase);
    atomic_store(&p->rows, 0);
    p->phase_started = now;
    atomic_store(&p->next_line, p->interval_us > 0 ? now + p->interval_us : INT64_MAX);
    atomic_store(&p->next_bar, now);
    imetrics_load(p->table, phase_names[phase], 0, p->estimated);
}

/* "12.3M" for a bar, which has little room: three significant digits. */
static void short_count(double n, char *buf, size_t len)
{
    if (n >= 1e9)
        snprintf(buf, len, "%.3gG", n / 1e9);
    else if (n >= 1e6)
        snprintf(buf, len, "%.3gM", n / 1e6);
    else if (n >= 1e3)
        snprintf(buf, len, "%.3gk", n / 1e3);
    else
        snprintf(buf, len, "%.0f", n);
}

/* What a line and the bar both tell. */
struct figures {
    const char *phase;
    int64_t rows;
    double rate, secs_left, fraction; /* secs_left, fraction < 0: unknown */
};

static struct figures figures_now(const struct load_progress *p, int64_t now)
{
    struct figures f = {phase_names[atomic_load(&p->phase)], atomic_load(&p->rows), 0, -1, -1};
    double secs = (double)(now - p->phase_started) / 1e6;
    f.rate = secs > 0 ? (double)f.rows / secs : 0;
    if (p->estimated > 0) {
        f.fraction = (double)f.rows / p->estimated;
        if (f.fraction > 1)
            f.fraction = 1; /* more rows than the statistics knew of */
        if (f.rate > 0)
            f.secs_left = p->estimated > (double)f.rows
                              ? (p->estimated - (double)f.rows) / f.rate
                              : 0;
    }
    return f;
}

static void print_line(const struct load_progress *p, const struct figures *f)
{
    char msg[400];
    if (f->fraction >= 0)
        snprintf(msg, sizeof msg, "loading %s (%s): %lld of about %.0f rows (%.0f%%), %.0f rows/s, "
                 "%.0f s left", p->table, f->phase, (long long)f->rows, p->estimated,
                 f->fraction * 100, f->rate, f->secs_left < 0 ? 0 : f->secs_left);
    else
        snprintf(msg, sizeof msg, "loading %s (%s): %lld rows, %.0f rows/s", p->table, f->phase,
                 (long long)f->rows, f->rate);
    if (p->tty)
        fputs("\r\033[K", stderr); /* the line takes the bar's place; the bar comes back */
    struct logfmt_line l;
    if (!logfmt_begin(&l, LOGFMT_INFO, msg))
        return;
    logfmt_str(&l, "table", p->table);
    logfmt_str(&l, "phase", f->phase);
    logfmt_int(&l, "rows", f->rows);
    if (p->estimated >= 0)
        logfmt_int(&l, "rows_estimated", (int64_t)p->estimated);
    logfmt_int(&l, "rows_per_s", (int64_t)f->rate);
    if (f->secs_left >= 0)
        logfmt_printf(&l, "eta_s", "%.1f", f->secs_left);
    logfmt_end(&l);
}

static void print_bar(const struct load_progress *p, const struct figures *f, bool done)
{
    enum { WIDTH = 24 };
    char bar[WIDTH + 1], rows[16], total[16], rate[16];
    int filled = f->fraction >= 0 ? (int)(f->fraction * WIDTH + 0.5) : 0;
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[WIDTH] = '\0';
    short_count((double)f->rows, rows, sizeof rows);
    short_count(p->estimated, total, sizeof total);
    short_count(f->rate, rate, sizeof rate);
    if (f->fraction >= 0)
        fprintf(stderr, "\r\033[Kloading %s [%s] %3.0f%% %s %s/%s rows %s rows/s %.0f s left%s",
                p->table, bar, f->fraction * 100, f->phase, rows, total, rate,
                f->secs_left < 0 ? 0 : f->secs_left, done ? "\n" : "");
    else
        fprintf(stderr, "\r\033[Kloading %s %s %s rows %s rows/s%s", p->table, f->phase, rows,
                rate, done ? "\n" : "");
}

void load_progress_add(struct load_progress *p, int64_t n)
{
    int64_t rows = atomic_fetch_add(&p->rows, n) + n;
    imetrics_load_rows(rows);
    int64_t now = now_usec();
    bool line_due = now >= atomic_load(&p->next_line);
    bool bar_due = p->tty && now >= atomic_load(&p->next_bar);
    if (!line_due && !bar_due)
        return;
    if (atomic_flag_test_and_set(&p->printing))
        return; /* another thread prints this tick */
    struct figures f = figures_now(p, now);
    if (line_due) {
        atomic_store(&p->next_line, now + p->interval_us);
        print_line(p, &f);
    }
    if (p->tty) {
        atomic_store(&p->next_bar, now + BAR_INTERVAL_US);
        print_bar(p, &f, false);
    }
    atomic_flag_clear(&p->printing);
}

void load_progress_end(struct load_progress *p)
{
    if (p->tty) {
        struct figures f = figures_now(p, now_usec());
        print_bar(p, &f, true);
    }
    imetrics_load(NULL, NULL, 0, -1);
}
