/* demo_plan: sizes `hone demo`'s AutoML search to a time budget: how many trials, at which epoch
 * rungs, how many epochs the best one may reach, from the seconds one epoch takes on one worker.
 * Pure arithmetic (no I/O) so a test can pin it; demo.c measures the epoch time and drives. */
#include "cli.h"

#include <math.h>
#include <string.h>

/* Epochs one full Hyperband pass costs with resume (a promoted trial trains only the epochs it
 * lacks): brackets s = smax..0 with n = ceil((smax+1)/(s+1) * eta^s) trials at R/eta^s units. */
static double hyperband_units(int R, int eta, int *trials)
{
    int smax = 0;
    double total = 0;

    while (pow(eta, smax + 1) <= R)
        smax++;
    *trials = 0;
    for (int s = smax; s >= 0; s--) {
        double n = ceil((double)(smax + 1) / (s + 1) * pow(eta, s));
        double r = (double)R / pow(eta, s), prev = 0;
        *trials += (int)n;
        for (int i = 0; i <= s; i++) {
            double ni = floor(n / pow(eta, i)), ri = r * pow(eta, i);
            total += ni * (ri - prev);
            prev = ri;
        }
    }
    return total;
}

/* ASHA with rungs at m, m*eta, .., m*eta^s epochs: the epochs n trials cost when each rung keeps
 * its top 1/eta. */
static double asha_epochs(int n, int eta, int s, int m)
{
    double total = 0, prev = 0;
    int k_n = n;

    for (int k = 0; k <= s; k++) {
        double r = m * pow(eta, k);
        total += k_n * (r - prev);
        prev = r;
        k_n /= eta;
        if (k_n < 1)
            k_n = 1;
    }
    return total;
}

/* How good a plan looks: the best trial's epochs count most (a convnet needs several to pass
 * 0.90 on Fashion-MNIST), then how many configurations get tried; past 6 epochs and 24 trials
 * (what a CPU affords in the default budget) more of each is still worth a little, so a GPU,
 * whose epochs take a fraction of a second, spends its budget on a wider and longer search
 * instead of finishing in a fifth of it. */
double cli_demo_plan_score(int full_epochs, int trials)
{
    double e = full_epochs, n = trials;
    return 5.0 * fmin(e, 6) + 1.0 * fmin(fmax(e - 6, 0), 6) + 0.5 * fmin(n, 24) +
           0.1 * fmin(fmax(n - 24, 0), CLI_DEMO_MAX_TRIALS - 24);
}

int cli_demo_plan_make(double budget_s, int workers, double epoch_s, double trial_overhead_s,
                       const char *algorithm, cli_demo_plan *p, char *err, size_t errlen)
{
    double usable, capacity, best = -1;
    double t; /* one epoch, the trial start-up spread over a few epochs */

    memset(p, 0, sizeof(*p));
    if (!(budget_s > 0) || workers < 1 || !(epoch_s > 0) || trial_overhead_s < 0) {
        snprintf(err, errlen, "budget, workers and epoch time must be positive");
        return HONE_EINVAL;
    }
    if (!algorithm)
        algorithm = "asha"; /* asynchronous: no worker idles at a rung, early stops are cheap */
    if (strcmp(algorithm, "asha") != 0 && strcmp(algorithm, "hyperband") != 0 &&
        strcmp(algorithm, "bayesian") != 0 && strcmp(algorithm, "bohb") != 0) {
        snprintf(err, errlen, "--algorithm must be hyperband, bayesian, asha or bohb (got '%s')",
                 algorithm);
        return HONE_EINVAL;
    }
    snprintf(p->algorithm, sizeof(p->algorithm), "%s", algorithm);
    /* Start-up, stragglers and the final test pass eat into the budget. */
    usable = budget_s * 0.88 - 20;
    if (usable < budget_s * 0.5)
        usable = budget_s * 0.5;
    capacity = usable * workers / epoch_s; /* epochs that fit */
    t = epoch_s + trial_overhead_s / 2;
    p->max_parallel = workers;

    if (strcmp(algorithm, "bayesian") == 0) {
        /* Full-budget trials: at least two rounds over the workers so the GP has data. */
        for (int e = 1; e <= 12; e++) {
            int n = (int)floor(usable * workers / (e * epoch_s + trial_overhead_s));
            double sc;
            if (n < 2 * workers && e > 1)
                continue;
            sc = cli_demo_plan_score(e, n);
            if (sc > best) {
                best = sc;
                p->R = e;
                p->nu = 3;
                p->epoch_multiplier = 1;
                p->max_trials = n < 60 ? n : 60;
            }
        }
    } else if (strcmp(algorithm, "asha") == 0) {
        /* Rungs m, m*eta, .. ; promotion needs eta trials at a rung, so the best trial's path is
         * about ceil(eta/workers) first rungs plus the rest of its epochs. */
        for (int eta = 2; eta <= 3; eta++)
            for (int s = 1; s <= 2; s++)
                for (int m = 1; m <= 10; m++) {
                    int full = m * (int)pow(eta, s), n;
                    double crit = ((eta + workers - 1) / workers * m + full - m) * t;
                    if (crit > 0.85 * usable || full > 30)
                        continue;
                    for (n = CLI_DEMO_MAX_TRIALS; n > eta; n--)
                        if (asha_epochs(n, eta, s, m) + n * trial_overhead_s / epoch_s <= capacity)
                            break;
                    if (n <= eta)
                        continue;
                    double sc = cli_demo_plan_score(full, n);
                    if (sc > best) {
                        best = sc;
                        p->R = (int)pow(eta, s);
                        p->nu = eta;
                        p->epoch_multiplier = m;
                        p->max_trials = n;
                    }
                }
    } else { /* hyperband, bohb: one full pass of the brackets must fit */
        for (int eta = 2; eta <= 3; eta++)
            for (int R = eta; R <= 27; R++)
                for (int m = 1; m <= 6; m++) {
                    int n;
                    double units = hyperband_units(R, eta, &n);
                    if (units * m + n * trial_overhead_s / epoch_s > capacity || R * m * t > usable)
                        continue;
                    double sc = cli_demo_plan_score(R * m, n);
                    if (sc > best) {
                        best = sc;
                        p->R = R;
                        p->nu = eta;
                        p->epoch_multiplier = m;
                        p->max_trials = n;
                    }
                }
    }
    if (best < 0) { /* nothing fits: the smallest search there is */
        p->R = strcmp(algorithm, "bayesian") == 0 ? 1 : 2;
        p->nu = 2;
        p->epoch_multiplier = 1;
        p->max_trials = workers > 2 ? workers : 2;
    }
    p->epochs = p->R * p->epoch_multiplier;
    return HONE_OK;
}

json_t *cli_demo_space(const char *network)
{
    /* Narrowed around what is known to work for small convnets on Fashion-MNIST (AdamW,
     * lr ~1e-3, cosine), so a short search lands above 0.90; the search still decides lr, batch
     * size, weight decay and dropout, and early stopping cuts the poor picks. */
    int cnn = strcmp(network, "cnn") == 0;
    return json_pack("{s:{s:s,s:f,s:f,s:b},s:{s:s,s:[i,i]},s:{s:s,s:f,s:f,s:b},"
                     "s:{s:s,s:f,s:f}}",
                     "train.lr", "type", "float", "min", cnn ? 5e-4 : 3e-4, "max",
                     cnn ? 3e-3 : 3e-3, "log", 1, "train.batch_size", "type", "categorical",
                     "values", 128, 256, "train.weight_decay", "type", "float", "min", 1e-5, "max",
                     5e-3, "log", 1, "model.dropout", "type", "float", "min", 0.0, "max", 0.4);
}
