/* demo_plan: sizes `hone demo`'s AutoML search to a time budget: which algorithm, how many
 * trials, how many epochs the best one may get, from the seconds one epoch takes here. Pure
 * arithmetic (no I/O) so a test can pin it; demo.c measures and drives. */
#include "cli.h"

#include <math.h>
#include <string.h>

/* Epochs one ASHA trial costs on average when each rung keeps 1/eta (rungs 1, eta, eta^2.. R). */
static double asha_epochs_per_trial(int R, int eta)
{
    double total = 0, frac = 1;
    int prev = 0;

    for (int r = 1; r <= R; r *= eta) {
        total += frac * (r - prev);
        prev = r;
        frac /= eta;
        if (r * eta > R && r < R) { /* a last rung at R itself */
            total += frac * (R - r);
            break;
        }
    }
    return total;
}

/* Epochs that one full Hyperband pass costs with resume (a promoted trial trains only the
 * epochs it lacks): brackets s = smax..0, n = ceil((smax+1)/(s+1) * eta^s), r = R / eta^s. */
static double hyperband_epochs(int R, int eta)
{
    int smax = 0;
    double total = 0;

    while (pow(eta, smax + 1) <= R)
        smax++;
    for (int s = smax; s >= 0; s--) {
        double n = ceil((double)(smax + 1) / (s + 1) * pow(eta, s));
        double r = (double)R / pow(eta, s), prev = 0;
        for (int i = 0; i <= s; i++) {
            double ni = floor(n / pow(eta, i)), ri = r * pow(eta, i);
            total += ni * (ri - prev);
            prev = ri;
        }
    }
    return total;
}

static int hyperband_trials(int R, int eta)
{
    int smax = 0, n = 0;
    while (pow(eta, smax + 1) <= R)
        smax++;
    for (int s = smax; s >= 0; s--)
        n += (int)ceil((double)(smax + 1) / (s + 1) * pow(eta, s));
    return n;
}

int cli_demo_plan_make(double budget_s, int workers, double epoch_s, double trial_overhead_s,
                       const char *algorithm, cli_demo_plan *p, char *err, size_t errlen)
{
    double usable, capacity;

    memset(p, 0, sizeof(*p));
    if (!(budget_s > 0) || workers < 1 || !(epoch_s > 0)) {
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
    /* Start-up, the last trial's tail and the final test pass eat into the budget. */
    usable = budget_s * 0.85 - 30;
    if (usable < budget_s * 0.5)
        usable = budget_s * 0.5;
    capacity = usable * workers; /* worker-seconds */
    p->max_parallel = workers;
    p->epoch_multiplier = 1;
    /* The best trial trains its R epochs one after another: keep that within ~half the time. */
    p->R = (int)floor(usable * 0.5 / (epoch_s + trial_overhead_s / 3.0));
    if (p->R > 12)
        p->R = 12;
    if (p->R < 1)
        p->R = 1;
    if (strcmp(algorithm, "asha") == 0) {
        p->nu = p->R >= 9 ? 3 : 2;
        double per =
            asha_epochs_per_trial(p->R, p->nu) * epoch_s + trial_overhead_s * (1 + 1.0 / p->nu);
        p->max_trials = (int)floor(capacity / per);
    } else if (strcmp(algorithm, "bayesian") == 0) {
        /* Full-budget trials only: fewer, longer; cap R so at least 2 rounds fit. */
        while (p->R > 1 && 2.0 * workers * (p->R * epoch_s + trial_overhead_s) > capacity)
            p->R--;
        p->nu = 3;
        p->max_trials = (int)floor(capacity / (p->R * epoch_s + trial_overhead_s));
    } else { /* hyperband, bohb: shrink R until one full pass fits */
        p->nu = 3;
        while (p->R > 1 && hyperband_epochs(p->R, p->nu) * epoch_s +
                                   hyperband_trials(p->R, p->nu) * trial_overhead_s >
                               capacity)
            p->R--;
        if (p->R < 3)
            p->nu = 2;
        p->max_trials = hyperband_trials(p->R, p->nu);
    }
    if (p->max_trials > 60)
        p->max_trials = 60;
    if (p->max_trials < workers)
        p->max_trials = workers;
    p->epochs = p->R * p->epoch_multiplier;
    return HONE_OK;
}

json_t *cli_demo_space(const char *network)
{
    /* Narrowed around what is known to work for small convnets on Fashion-MNIST (AdamW,
     * lr ~1e-3), so a short search lands above 0.90; the search still decides lr, batch size,
     * weight decay and dropout, and the early stops cut the poor picks. */
    int cnn = strcmp(network, "cnn") == 0;
    return json_pack("{s:{s:s,s:f,s:f,s:b},s:{s:s,s:[i,i,i]},s:{s:s,s:f,s:f,s:b},"
                     "s:{s:s,s:f,s:f},s:{s:s,s:[i,i]}}",
                     "train.lr", "type", "float", "min", cnn ? 4e-4 : 3e-4, "max",
                     cnn ? 4e-3 : 3e-3, "log", 1, "train.batch_size", "type", "categorical",
                     "values", 64, 128, 256, "train.weight_decay", "type", "float", "min", 1e-5,
                     "max", 1e-2, "log", 1, "model.dropout", "type", "float", "min", 0.0, "max",
                     0.4, "model.hidden", "type", "categorical", "values", cnn ? 128 : 256,
                     cnn ? 256 : 512);
}
