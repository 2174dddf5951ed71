/* test_dehb: DEHB (search/dehb.c). The DE operators (mutants inside the unit cube, binomial
 * crossover keeps at least one coordinate of the mutant); the schedule against Hyperband's
 * bracket plan (first pass: new trials at each bracket's first rung, the top n_{i+1} resumed;
 * later passes: n_i new trials at every rung, each trained from scratch to its rung's epochs and
 * stopped there, a rung started only once the rung below is complete); max_parallel kept and
 * filled; offspring that are valid configs of a mixed space; selection (the best result at each
 * fidelity is in its subpopulation, no failed or NaN result ever is); failed and NaN trials
 * never promoted; the first bracket's first rung drawn as Hyperband's; determinism from the
 * seed; the name's parsing. */
#include "search_internal.h"
#include "test_search_sim.h"

static void check_operators(void)
{
    hone_rng r;
    hone_rng_seed(&r, 99);
    enum { D = 7 };
    long from_mutant = 0, coords = 0;
    for (int it = 0; it < 20000; it++) {
        double a[D], b[D], c[D], m[D], t[D], ch[D];
        for (int k = 0; k < D; k++) {
            a[k] = hone_rng_uniform(&r);
            b[k] = hone_rng_uniform(&r);
            c[k] = hone_rng_uniform(&r);
            t[k] = 2.0 + k; /* outside the cube: tells target coordinates from mutant ones */
        }
        double F = it % 2 ? 0.5 : 1.0;
        dehb_mutate(D, a, b, c, F, &r, m);
        for (int k = 0; k < D; k++) {
            double raw = a[k] + F * (b[k] - c[k]);
            REQUIRE(m[k] >= 0.0 && m[k] <= 1.0);
            if (raw >= 0.0 && raw <= 1.0)
                REQUIRE(m[k] == raw); /* inside: the plain rand/1 mutant */
        }
        double cr = it % 4 == 0 ? 0.0 : 0.5;
        dehb_crossover(D, t, m, cr, &r, ch);
        int nm = 0;
        for (int k = 0; k < D; k++) {
            REQUIRE(ch[k] == m[k] || ch[k] == t[k]);
            nm += ch[k] == m[k];
        }
        REQUIRE(nm >= 1); /* at least one coordinate from the mutant */
        if (cr == 0.0)
            REQUIRE(nm == 1);
        else {
            from_mutant += nm;
            coords += D;
        }
    }
    /* with cr 0.5: 0.5 + (1/D) * 0.5 of the coordinates come from the mutant */
    double frac = (double)from_mutant / (double)coords, want = 0.5 + 0.5 / D;
    printf("crossover: %.4f of coordinates from the mutant (expected %.4f)\n", frac, want);
    REQUIRE(fabs(frac - want) < 0.01);
}

static hone_search *make(const hone_space *sp, int R, int eta, int mult, int P, int passes,
                         uint64_t seed)
{
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = HONE_ALGO_DEHB;
    o.R = R;
    o.eta = eta;
    o.epoch_multiplier = mult;
    o.max_parallel = P;
    o.hb_iterations = passes;
    o.seed = seed;
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    return s;
}

/* Two passes over the brackets with P workers, checked against the plan. */
static void check_schedule(int R, int eta, int mult, int P)
{
    hone_space *sp = sim_space();
    hone_search *s = make(sp, R, eta, mult, P, 2, 5);
    hb_state hb;
    REQUIRE(hb_build(&hb, R, eta, mult, 1) == 0);
    long planned = 0;
    int ntrials = 0, nresumes = 0;
    for (int b = 0; b < hb.nb; b++) {
        const hb_bracket *br = &hb.br[b];
        for (int i = 0; i <= br->s; i++) {
            planned += (long)br->n[i] * (br->ep[i] - (i ? br->ep[i - 1] : 0)); /* pass 1 */
            planned += (long)br->n[i] * br->ep[i];                             /* pass 2 */
            ntrials += br->n[i];
            if (i > 0)
                nresumes += br->n[i];
        }
        ntrials += br->n[0];
    }
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.epochs_remaining == planned);
    sim m;
    sim_init(&m, s, sp, P, sim_curve);
    while (sim_step(&m))
        ;
    REQUIRE(m.epochs == planned);
    REQUIRE(m.nvals == ntrials);

    int *first_ep = calloc((size_t)ntrials, sizeof(int)),
        *last = calloc((size_t)ntrials, sizeof(int));
    int running = 0, maxrun = 0, resumes = 0;
    for (int k = 0; k < m.nev; k++) {
        const sim_event *e = &m.ev[k];
        if (e->type == EV_ASK && e->kind == HONE_ASK_NEW)
            first_ep[e->trial] = e->epoch;
        if (e->type == EV_ASK && e->kind == HONE_ASK_RESUME)
            resumes++;
        if (e->type == EV_ASK && (e->kind == HONE_ASK_NEW || e->kind == HONE_ASK_RESUME))
            running++;
        if (e->type == EV_END)
            running--;
        maxrun = running > maxrun ? running : maxrun;
        if (e->type == EV_REPORT && e->epoch > last[e->trial])
            last[e->trial] = e->epoch;
    }
    REQUIRE(maxrun <= P);
    if (P > 1)
        REQUIRE(maxrun == P);
    REQUIRE(resumes == nresumes); /* promotions by resuming: the first pass only */

    /* per global bracket and rung: trials created there, and (pass 1) reaching its epochs */
    for (int g = 0; g < 2 * hb.nb; g++) {
        const hb_bracket *br = &hb.br[g % hb.nb];
        for (int i = 0; i <= br->s; i++) {
            int created = 0, reached = 0, last_new = -1, first_new = m.nev;
            for (int t = 0; t < ntrials; t++) {
                const sr_trial *tr = &s->t[t];
                if (tr->bracket != g)
                    continue;
                if (first_ep[t] == br->ep[i]) {
                    created++;
                    /* a new trial trains to its rung's epochs; later passes stop it there */
                    if (g >= hb.nb)
                        REQUIRE(last[t] == br->ep[i] && tr->rung == i);
                }
                reached += last[t] >= br->ep[i];
            }
            if (g < hb.nb) {
                REQUIRE(created == (i == 0 ? br->n[0] : 0));
                REQUIRE(reached == br->n[i]);
            } else {
                REQUIRE(created == br->n[i]);
            }
            if (g < hb.nb || i == 0)
                continue;
            /* a later pass's rung i starts only after every trial of rung i-1 reported */
            for (int k = 0; k < m.nev; k++) {
                const sim_event *e = &m.ev[k];
                if (e->type == EV_ASK && e->kind == HONE_ASK_NEW && s->t[e->trial].bracket == g &&
                    s->t[e->trial].rung == i)
                    first_new = k < first_new ? k : first_new;
                if (e->type == EV_REPORT && s->t[e->trial].bracket == g &&
                    s->t[e->trial].rung == i - 1 && e->epoch == br->ep[i - 1])
                    last_new = k > last_new ? k : last_new;
            }
            REQUIRE(last_new >= 0 && last_new < first_new);
        }
    }
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.trials_created == ntrials && pr.trials_running == 0);
    REQUIRE(pr.trials_finished == ntrials && pr.trials_failed == 0);
    REQUIRE(pr.epochs_done == planned && pr.epochs_remaining == 0);
    hone_ask a;
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_DONE);
    printf("schedule R %d eta %d mult %d P %d: %d trials, %d resumes, %ld epochs\n", R, eta, mult,
           P, ntrials, resumes, planned);
    free(first_ep);
    free(last);
    sim_free(&m);
    hb_free(&hb);
    hone_search_free(s);
    hone_space_free(sp);
}

/* Selection: after a search, each level's subpopulation holds only trials that reported a finite
 * metric at that level's epochs, and the best such result is a member. */
static void check_selection(hone_search *s, const sim *m)
{
    const hb_bracket *b0 = &s->hb.br[0];
    for (int lev = 0; lev <= s->hb.smax; lev++) {
        int size = 0, best = -1;
        double bestv = -INFINITY;
        /* results at the level: a rung boundary there (not an epoch passed on the way) */
        for (int t = 0; t < s->nt; t++) {
            const sr_trial *tr = &s->t[t];
            int k = lev - tr->bracket % s->hb.nb;
            if (tr->state == SR_FAILED || k < 0 || k > tr->reached || !isfinite(tr->rungm[k]))
                continue;
            REQUIRE(tr->rungm[k] == tr->metric[b0->ep[lev]]);
            if (tr->rungm[k] > bestv) {
                bestv = tr->rungm[k];
                best = t;
            }
        }
        dehb_member(s, lev, 0, &size);
        REQUIRE(size > 0);
        int found = 0, members = 0;
        for (int k = 0; k < size; k++) {
            int id = dehb_member(s, lev, k, NULL);
            if (id < 0)
                continue;
            members++;
            int k = lev - s->t[id].bracket % s->hb.nb;
            REQUIRE(s->t[id].state != SR_FAILED && k >= 0 && k <= s->t[id].reached);
            REQUIRE(isfinite(s->t[id].rungm[k]));
            found |= id == best || s->t[id].rungm[k] == bestv;
        }
        REQUIRE(best < 0 || found);
        (void)m;
        REQUIRE(members > 0);
    }
}

static double nan_curve(const double *u, int epoch, int trial)
{
    return trial % 4 == 2 ? NAN : sim_curve(u, epoch, trial);
}

/* Failed (crashed) and NaN trials: never members, never resumed, the search still ends. */
static void check_failures(void)
{
    hone_space *sp = sim_space();
    hone_search *s = make(sp, 9, 3, 1, 3, 2, 17);
    sim m;
    sim_init(&m, s, sp, 3, nan_curve);
    m.fail_every = 5; /* trials 1, 6, 11, ... crash at their 2nd epoch */
    while (sim_step(&m))
        ;
    check_selection(s, &m);
    for (int k = 0; k < m.nev; k++) {
        const sim_event *e = &m.ev[k];
        if (e->type == EV_ASK && e->kind == HONE_ASK_RESUME)
            REQUIRE(e->trial % 4 != 2 && e->trial % 5 != 1);
    }
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.trials_failed > 0 && pr.trials_running == 0 && pr.best_trial >= 0);
    REQUIRE(pr.best_trial % 4 != 2 && pr.best_trial % 5 != 1 && isfinite(pr.best_metric));
    sim_free(&m);
    hone_search_free(s);
    hone_space_free(sp);
}

/* Offspring are valid configs of a mixed space (ints on their grid, categories and bools), and
 * the same seed gives the same search, another seed another. */
static const char *mixed_json =
    "{\"lr\": {\"type\": \"float\", \"min\": 1e-4, \"max\": 1, \"log\": true},"
    " \"batch\": {\"type\": \"int\", \"min\": 16, \"max\": 512, \"log\": true, \"step\": 16},"
    " \"opt\": {\"type\": \"categorical\", \"values\": [\"sgd\", \"adamw\", \"lion\"]},"
    " \"nesterov\": {\"type\": \"bool\"}}";

static double mixed_curve(const double *u, int epoch, int trial)
{
    return sim_curve(u, epoch, trial) - 0.05 * (u[2] - 0.5) * (u[2] - 0.5) -
           0.02 * (u[3] > 0.5 ? 0 : 1) - 0.1 * (u[1] - 0.6) * (u[1] - 0.6);
}

static sim run_mixed(const hone_space *sp, uint64_t seed, hone_search **out)
{
    hone_search *s = make(sp, 9, 3, 2, 4, 3, seed);
    sim m;
    sim_init(&m, s, sp, 4, mixed_curve);
    while (sim_step(&m))
        ;
    *out = s;
    return m;
}

static void check_mixed_and_determinism(void)
{
    char err[256];
    hone_space *sp;
    REQUIRE(hone_space_parse(mixed_json, &sp, err, sizeof err) == 0);
    hone_search *a, *b, *c;
    sim ma = run_mixed(sp, 3, &a), mb = run_mixed(sp, 3, &b), mc = run_mixed(sp, 4, &c);
    REQUIRE(ma.nev == mb.nev);
    REQUIRE(memcmp(ma.ev, mb.ev, (size_t)ma.nev * sizeof(sim_event)) == 0);
    REQUIRE(ma.nvals == mc.nvals); /* the schedule does not depend on the seed... */
    int other = 0;                 /* ...the configs do (np = 4 of the sim's 8 slots a trial) */
    for (int t = 0; t < ma.nvals; t++)
        other += memcmp(ma.vals + (size_t)t * 8, mc.vals + (size_t)t * 8, 4 * sizeof(double)) != 0;
    REQUIRE(other > ma.nvals / 2);
    int distinct_from_parents = 0;
    for (int t = 0; t < ma.nvals; t++) {
        const double *v = ma.vals + (size_t)t * 8;
        REQUIRE(v[0] >= 1e-4 && v[0] <= 1);
        REQUIRE(v[1] >= 16 && v[1] <= 512 && fmod(v[1] - 16, 16) == 0);
        REQUIRE(v[2] == 0 || v[2] == 1 || v[2] == 2);
        REQUIRE(v[3] == 0 || v[3] == 1);
        int same = 0;
        for (int u = 0; u < t; u++)
            same |= memcmp(v, ma.vals + (size_t)u * 8, 4 * sizeof(double)) == 0;
        distinct_from_parents += !same;
    }
    REQUIRE(distinct_from_parents > ma.nvals * 3 / 4); /* offspring are new configs */
    check_selection(a, &ma);
    /* evolution improves what it selects on: the third pass's first-rung configs do better at
     * that rung's epochs (2) than the first bracket's random ones */
    double early = 0, late = 0;
    int ne = 0, nl = 0;
    for (int t = 0; t < ma.nvals; t++) {
        double u[8];
        hone_space_to_unit(sp, ma.vals + (size_t)t * 8, u);
        double q = mixed_curve(u, a->hb.br[0].ep[0], 0);
        if (a->t[t].bracket == 0) {
            early += q;
            ne++;
        } else if (a->t[t].bracket == 2 * a->hb.nb && a->t[t].rung == 0) {
            late += q;
            nl++;
        }
    }
    printf(
        "mean metric at the first rung: first bracket %.4f (%d), third pass's first bracket %.4f "
        "(%d)\n",
        early / ne, ne, late / nl, nl);
    REQUIRE(ne > 0 && nl > 0 && late / nl > early / ne);
    sim_free(&ma);
    sim_free(&mb);
    sim_free(&mc);
    hone_search_free(a);
    hone_search_free(b);
    hone_search_free(c);
    hone_space_free(sp);
}

static void check_names(void)
{
    hone_algo a;
    REQUIRE(hone_algo_parse("dehb", &a) == 0 && a == HONE_ALGO_DEHB);
    REQUIRE(hone_algo_parse("DEHB", &a) == 0 && a == HONE_ALGO_DEHB);
    REQUIRE(strcmp(hone_algo_name(HONE_ALGO_DEHB), "dehb") == 0);
    REQUIRE(hone_algo_multifidelity(HONE_ALGO_DEHB) && !hone_algo_multifidelity(HONE_ALGO_RANDOM));
    int listed = 0;
    for (int i = 0; hone_algo_names[i]; i++)
        listed |= !strcmp(hone_algo_names[i], "dehb");
    REQUIRE(listed);
    /* bad options as Hyperband's */
    hone_space *sp = sim_space();
    hone_search_opts o;
    hone_search *s = NULL;
    int *fields[] = {&o.R, &o.eta, &o.epoch_multiplier, &o.max_parallel, &o.hb_iterations};
    int bad[] = {0, 1, 0, 0, 0};
    for (int k = 0; k < 5; k++) {
        hone_search_opts_default(&o);
        o.algo = HONE_ALGO_DEHB;
        *fields[k] = bad[k];
        REQUIRE(hone_search_new(sp, &o, &s) == HONE_EINVAL && s == NULL);
    }
    hone_space_free(sp);
}

/* The first bracket's first rung is random, drawn exactly as Hyperband draws it (same seed, same
 * configs); the next bracket's first configs are DE offspring once results exist, so they differ.
 */
static void check_first_rung_random(void)
{
    hone_space *sp = sim_space();
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.R = 9;
    o.eta = 3;
    o.max_parallel = 1;
    o.seed = 21;
    hone_search *h, *d;
    o.algo = HONE_ALGO_HYPERBAND;
    REQUIRE(hone_search_new(sp, &o, &h) == 0);
    o.algo = HONE_ALGO_DEHB;
    REQUIRE(hone_search_new(sp, &o, &d) == 0);
    sim mh, md;
    sim_init(&mh, h, sp, 1, sim_curve);
    sim_init(&md, d, sp, 1, sim_curve);
    while (sim_step(&mh))
        ;
    while (sim_step(&md))
        ;
    REQUIRE(mh.nvals == 17 && md.nvals == 17); /* R 9: brackets of 9, 5 and 3 */
    for (int t = 0; t < 9; t++)                /* np = 3 of the sim's 8 slots a trial */
        REQUIRE(memcmp(mh.vals + t * 8, md.vals + t * 8, 3 * sizeof(double)) == 0);
    int differ = 0;
    for (int t = 9; t < 17; t++)
        differ += memcmp(mh.vals + t * 8, md.vals + t * 8, 3 * sizeof(double)) != 0;
    REQUIRE(differ == 8);
    sim_free(&mh);
    sim_free(&md);
    hone_search_free(h);
    hone_search_free(d);
    hone_space_free(sp);
}

int main(void)
{
    check_names();
    check_operators();
    check_first_rung_random();
    check_schedule(9, 3, 1, 1);
    check_schedule(27, 3, 2, 4);
    check_schedule(16, 2, 1, 3);
    check_schedule(100, 4, 1, 6);
    check_failures();
    check_mixed_and_determinism();
    printf("ok\n");
    return 0;
}
