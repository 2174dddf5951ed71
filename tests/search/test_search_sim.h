/* test_search_sim: a tiny deterministic worker pool for the facade tests. It drives a hone_search
 * with a synthetic learning-curve objective, P workers, one epoch per step, and records every call
 * and answer so another search can replay or mirror them. Test-only; header so each test is one
 * executable. */
#ifndef HONE_TEST_SEARCH_SIM_H
#define HONE_TEST_SEARCH_SIM_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "check.h"

enum { EV_ASK = 0, EV_REPORT = 1, EV_END = 2 };

typedef struct sim_event {
    int type;
    int kind; /* ask: hone_ask_kind; report: decision; end: failed */
    int trial, epoch;
    double metric;
    double values[8];
} sim_event;

typedef struct sim {
    hone_search *s;
    const hone_space *sp;
    int np, P;
    int slot_trial[16], slot_epoch[16];
    double (*objective)(const double *unit, int epoch, int trial);
    int fail_every; /* trial % fail_every == 1 crashes at its 2nd epoch (0: never) */
    double *vals;   /* values of each trial, 8 per trial */
    int nvals;
    sim_event *ev;
    int nev, capev;
    long epochs;
    int done;
} sim;

static inline void sim_log(sim *m, const sim_event *e)
{
    if (m->nev == m->capev) {
        m->capev = m->capev ? m->capev * 2 : 256;
        m->ev = realloc(m->ev, (size_t)m->capev * sizeof(*m->ev));
        REQUIRE(m->ev);
    }
    m->ev[m->nev++] = *e;
}

static inline void sim_init(sim *m, hone_search *s, const hone_space *sp, int P,
                            double (*objective)(const double *, int, int))
{
    memset(m, 0, sizeof(*m));
    m->s = s;
    m->sp = sp;
    m->np = hone_space_nparams(sp);
    REQUIRE(m->np <= 8 && P <= 16);
    m->P = P;
    m->objective = objective;
    for (int i = 0; i < 16; i++)
        m->slot_trial[i] = -1;
}

static inline void sim_free(sim *m)
{
    free(m->vals);
    free(m->ev);
}

/* One round: fill idle workers through ask, then every busy worker trains one epoch and reports.
 * Returns 0 once the search said DONE with nobody running. */
static inline int sim_step(sim *m)
{
    for (;;) {
        hone_ask a;
        sim_event e = {.type = EV_ASK};
        REQUIRE(hone_search_ask(m->s, &a) == 0);
        e.kind = a.kind;
        e.trial = a.trial;
        e.epoch = a.epochs;
        if (a.kind == HONE_ASK_NEW)
            memcpy(e.values, a.values, (size_t)m->np * sizeof(double));
        sim_log(m, &e);
        if (a.kind == HONE_ASK_DONE) {
            for (int i = 0; i < m->P; i++)
                REQUIRE(m->slot_trial[i] < 0);
            m->done = 1;
            return 0;
        }
        if (a.kind == HONE_ASK_WAIT)
            break;
        if (a.kind == HONE_ASK_NEW) {
            REQUIRE(a.trial == m->nvals);
            m->vals = realloc(m->vals, (size_t)(m->nvals + 1) * 8 * sizeof(double));
            memcpy(m->vals + (size_t)m->nvals * 8, a.values, (size_t)m->np * sizeof(double));
            m->nvals++;
        }
        int slot = -1;
        for (int i = 0; i < m->P && slot < 0; i++)
            if (m->slot_trial[i] < 0)
                slot = i;
        REQUIRE(slot >= 0); /* ask must respect max_parallel */
        m->slot_trial[slot] = a.trial;
        /* a resumed trial continues after the epoch it paused at (found in the log) */
        m->slot_epoch[slot] = a.kind == HONE_ASK_RESUME ? -1 : 1;
    }
    for (int i = 0; i < m->P; i++) {
        int t = m->slot_trial[i];
        if (t < 0)
            continue;
        if (m->slot_epoch[i] < 0) {
            int last = 0;
            for (int k = 0; k < m->nev; k++)
                if (m->ev[k].type == EV_REPORT && m->ev[k].trial == t && m->ev[k].epoch > last)
                    last = m->ev[k].epoch;
            m->slot_epoch[i] = last + 1;
        }
        int ep = m->slot_epoch[i];
        sim_event e = {.type = EV_REPORT, .trial = t, .epoch = ep};
        if (m->fail_every && t % m->fail_every == 1 && ep == 2) {
            e.type = EV_END;
            e.kind = 1;
            REQUIRE(hone_search_end(m->s, t, 1) == 0);
            sim_log(m, &e);
            m->slot_trial[i] = -1;
            continue;
        }
        double unit[8];
        hone_space_to_unit(m->sp, m->vals + (size_t)t * 8, unit);
        e.metric = m->objective(unit, ep, t);
        hone_decision d;
        REQUIRE(hone_search_report(m->s, t, ep, e.metric, &d) == 0);
        e.kind = d;
        sim_log(m, &e);
        m->epochs++;
        if (d == HONE_DECIDE_CONTINUE) {
            m->slot_epoch[i]++;
        } else {
            sim_event en = {.type = EV_END, .trial = t};
            REQUIRE(hone_search_end(m->s, t, 0) == 0);
            sim_log(m, &en);
            m->slot_trial[i] = -1;
        }
    }
    return 1;
}

/* Applies a logged event to another search and checks it answers the same. With replay set,
 * NEW asks go through hone_search_replay_new and WAITs are skipped (as a controller would). */
static inline void sim_mirror(hone_search *b, int np, const sim_event *e, int replay)
{
    if (e->type == EV_ASK) {
        if (replay && e->kind == HONE_ASK_WAIT)
            return;
        if (replay && e->kind == HONE_ASK_NEW) {
            REQUIRE(hone_search_replay_new(b, e->trial, e->values, e->epoch) == 0);
            return;
        }
        hone_ask a;
        REQUIRE(hone_search_ask(b, &a) == 0);
        REQUIRE((int)a.kind == e->kind);
        if (a.kind == HONE_ASK_NEW || a.kind == HONE_ASK_RESUME) {
            REQUIRE(a.trial == e->trial);
            REQUIRE(a.epochs == e->epoch);
        }
        if (a.kind == HONE_ASK_NEW)
            REQUIRE(memcmp(a.values, e->values, (size_t)np * sizeof(double)) == 0);
    } else if (e->type == EV_REPORT) {
        hone_decision d;
        REQUIRE(hone_search_report(b, e->trial, e->epoch, e->metric, &d) == 0);
        REQUIRE((int)d == e->kind);
    } else {
        REQUIRE(hone_search_end(b, e->trial, e->kind) == 0);
    }
}

/* A learning curve: final value from a smooth bowl in the unit cube (optimum near
 * (0.3, 0.7, 0.5, ...)), approached at a config-dependent speed, plus hashed noise. */
static inline double sim_curve(const double *u, int epoch, int trial)
{
    double fin = 0.9 - 0.4 * (u[0] - 0.3) * (u[0] - 0.3) - 0.2 * (u[1] - 0.7) * (u[1] - 0.7);
    double tau = 0.5 + 4.0 * (1.0 - u[0]);
    uint64_t h = (uint64_t)trial * 0x9E3779B97F4A7C15ull ^ (uint64_t)epoch * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    double noise = ((double)(h % 1000) / 1000.0 - 0.5) * 0.002;
    return fin - (fin - 0.1) * exp(-epoch / tau) + noise;
}

static inline hone_space *sim_space(void)
{
    hone_space *sp = NULL;
    char err[256];
    const char *json = "{\"lr\": {\"type\": \"float\", \"min\": 0.0001, \"max\": 1, \"log\": true},"
                       " \"wd\": {\"type\": \"float\", \"min\": 0, \"max\": 0.1},"
                       " \"opt\": {\"type\": \"categorical\", \"values\": [\"sgd\", \"adam\"]}}";
    int rc = hone_space_parse(json, &sp, err, sizeof(err));
    if (rc)
        fprintf(stderr, "space: %s\n", err);
    REQUIRE(rc == 0);
    return sp;
}

#endif
