/* test_demo_plan: `hone demo` sizes its search to the budget: more budget or a faster machine
 * never means fewer trials or epochs, the best trial's epochs fit in the time, every algorithm
 * gets a valid plan, and nonsense is refused. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "check.h"

/* What a plan is worth to the demo (epochs for the best trial, then configurations tried). More
 * budget must never make this worse. */
static double worth(const cli_demo_plan *p)
{
    return cli_demo_plan_score(p->epochs, p->max_trials);
}

static void test_budget_monotone(void)
{
    static const char *const algos[] = {"asha", "hyperband", "bayesian", "bohb"};
    char err[256];

    for (size_t a = 0; a < HONE_ARRAY_LEN(algos); a++) {
        cli_demo_plan prev = {0}, p;
        for (int minutes = 2; minutes <= 60; minutes += 2) {
            CHECK(cli_demo_plan_make(minutes * 60.0, 2, 50, 6, algos[a], &p, err, sizeof(err)) ==
                  0);
            CHECK(strcmp(p.algorithm, algos[a]) == 0);
            CHECK(p.R >= 1 && p.nu >= 2 && p.epoch_multiplier >= 1 && p.max_parallel == 2);
            CHECK(p.max_trials >= 2 && p.max_trials <= CLI_DEMO_MAX_TRIALS);
            CHECK(p.epochs == p.R * p.epoch_multiplier);
            /* the best trial's epochs run one after another: they must fit in the budget */
            CHECK(p.epochs * 50.0 <= minutes * 60.0 || p.epochs <= 2);
            CHECK(worth(&p) >= worth(&prev));
            prev = p;
        }
    }
}

static void test_default_and_errors(void)
{
    cli_demo_plan p, fast;
    char err[256];

    CHECK(cli_demo_plan_make(720, 2, 50, 6, NULL, &p, err, sizeof(err)) == 0);
    CHECK(strcmp(p.algorithm, "asha") == 0);
    CHECK(p.R >= 3); /* enough epochs for a CNN to pass 0.90 */
    CHECK(cli_demo_plan_make(720, 2, 5, 6, NULL, &fast, err, sizeof(err)) == 0);
    CHECK(worth(&fast) >= worth(&p));
    /* a GPU host (4 workers sharing one, ~0.5 s an epoch each, resident trainers): 3 minutes buy
     * a wide and long search, not the CPU's 6 epochs over a few dozen trials */
    CHECK(cli_demo_plan_make(180, 4, 0.5, 1, NULL, &fast, err, sizeof(err)) == 0);
    CHECK(fast.max_trials >= 100 && fast.epochs >= 12);
    CHECK(cli_demo_plan_score(12, 24) > cli_demo_plan_score(6, 24));
    CHECK(cli_demo_plan_score(6, 100) > cli_demo_plan_score(6, 24));
    CHECK(cli_demo_plan_score(6, 24) > cli_demo_plan_score(30, 2)); /* epochs first, not alone */
    CHECK(cli_demo_plan_make(720, 2, 50, 6, "grid", &p, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "--algorithm"));
    CHECK(cli_demo_plan_make(0, 2, 50, 6, NULL, &p, err, sizeof(err)) == HONE_EINVAL);
    CHECK(cli_demo_plan_make(720, 0, 50, 6, NULL, &p, err, sizeof(err)) == HONE_EINVAL);
}

static void test_space(void)
{
    json_t *s = cli_demo_space("cnn");
    CHECK(json_object_size(s) >= 3);
    CHECK(json_object_get(s, "train.lr") != NULL);
    CHECK(json_is_true(json_object_get(json_object_get(s, "train.lr"), "log")));
    json_decref(s);
}

int main(void)
{
    test_budget_monotone();
    test_default_and_errors();
    test_space();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
