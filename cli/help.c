/* help: what `hone help`, `hone help COMMAND` and `hone help TOPIC` print (always on stdout,
 * exit 0), built from the tables the code runs on: the command tables, the spec key table
 * (spec/spec.c), search's algorithm names and the option values of values.c. A usage error
 * prints elsewhere (stderr, exit 2); nothing here decides that. */
#include "cli.h"
#include "search.h"
#include "spec.h"

#include <stdint.h>
#include <string.h>

void cli_usage_all(FILE *f, const cli_command *const *tabs, const int *ns, int ntabs)
{
    fprintf(f, "usage: hone [--url URL] [--token T] [--json] COMMAND ...\n\ncommands:\n");
    for (int t = 0; t < ntabs; t++)
        for (int i = 0; i < ns[t]; i++) {
            const cli_command *c = &tabs[t][i];
            char head[64];
            snprintf(head, sizeof(head), "%s%s%s", c->noun, c->verb ? " " : "",
                     c->verb ? c->verb : "");
            fprintf(f, "  hone %-28s %s\n", head, c->summary);
        }
    fprintf(f, "  hone %-28s %s\n", "completion bash", "print a bash completion script");
    fprintf(f, "\nhelp topics (hone help TOPIC):");
    for (size_t i = 0; cli_help_topics[i].name; i++)
        fprintf(f, " %s", cli_help_topics[i].name);
    fprintf(f, "\n\nRun `hone COMMAND --help` (or `hone help COMMAND`) for a command's options;\n"
               "`hone --version` for the version. The controller URL comes from --url, then "
               "$HONE_URL, then the url\n"
               "`hone login` saved, then http://127.0.0.1:8080; the token from --token, then\n"
               "$HONE_TOKEN, then the one `hone login` saved for that url. Wherever an ID is\n"
               "asked for (a dataset, experiment or job), its name works too.\n");
}

void cli_usage_cmd(FILE *f, const cli_command *c)
{
    fprintf(f, "usage: hone %s%s%s %s\n%s\n\noptions:\n", c->noun, c->verb ? " " : "",
            c->verb ? c->verb : "", c->usage, c->summary);
    for (int i = 0; i < c->nopts; i++)
        fprintf(f, "  --%-22s %s%s\n", c->opts[i].name, c->opts[i].help,
                c->opts[i].required ? " (required)" : "");
    for (int i = 0; i < cli_nglobal_opts; i++)
        fprintf(f, "  --%-22s %s\n", cli_global_opts[i].name, cli_global_opts[i].help);
}

void cli_list_verbs(FILE *f, const char *noun, const cli_command *const *tabs, const int *ns,
                    int ntabs)
{
    fprintf(f, "hone %s commands:", noun);
    for (int t = 0; t < ntabs; t++)
        for (int i = 0; i < ns[t]; i++)
            if (!strcmp(tabs[t][i].noun, noun) && tabs[t][i].verb)
                fprintf(f, " %s", tabs[t][i].verb);
    fprintf(f, "\n\n");
    for (int t = 0; t < ntabs; t++)
        for (int i = 0; i < ns[t]; i++)
            if (!strcmp(tabs[t][i].noun, noun) && tabs[t][i].verb)
                fprintf(f, "  hone %s %-18s %s\n", noun, tabs[t][i].verb, tabs[t][i].summary);
    fprintf(f, "Run `hone %s VERB --help` for a command's options.\n", noun);
}

/* ---------------------------------------------------------------- topics */

static void key_range(const hone_spec_key *k, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    switch (k->type) {
    case HONE_SPEC_INT:
        snprintf(buf, len, "%lld .. %lld", k->imin, k->imax);
        break;
    case HONE_SPEC_NUM:
        snprintf(buf, len, "%g .. %g", k->min, k->max);
        break;
    case HONE_SPEC_BOOL:
        snprintf(buf, len, "true, false");
        break;
    case HONE_SPEC_ENUM:
        for (size_t i = 0; k->choices && k->choices[i] && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", k->choices[i]);
        break;
    case HONE_SPEC_STR:
        snprintf(buf, len, "text");
        break;
    }
}

static void key_networks(const hone_spec_key *k, char *buf, size_t len)
{
    size_t n = 0;
    if ((k->networks & ((1u << HONE_SPEC_NNETS) - 1)) == (1u << HONE_SPEC_NNETS) - 1) {
        snprintf(buf, len, "all");
        return;
    }
    buf[0] = '\0';
    for (int i = 0; i < HONE_SPEC_NNETS && n < len; i++)
        if (k->networks >> i & 1u)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", hone_spec_networks[i]);
}

static int topic_specs(FILE *f)
{
    fprintf(f, "Spec keys: what `--spec KEY=VALUE` (experiment create/update, train start, automl\n"
               "start) and an experiment's \"specs\" may set, from the trainer's own key table.\n"
               "Defaults marked * depend on the network (shown: mlp's). `hone experiment\n"
               "automl-defaults ID` lists what AutoML sweeps.\n\n");
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const hone_spec_key *k = hone_spec_key_at(i);
        char range[256], nets[96];
        int per_net = 0;
        if (!k->user)
            continue;
        for (int j = 0; j < HONE_SPEC_NNETS; j++)
            per_net |= k->def_net[j] != NULL;
        key_range(k, range, sizeof range);
        key_networks(k, nets, sizeof nets);
        fprintf(f, "  %-26s %s\n  %-26s default %s%s; %s; networks: %s\n", k->name,
                k->doc ? k->doc : "", "", k->def && k->def[0] ? k->def : "\"\"", per_net ? "*" : "",
                range, nets);
    }
    return 0;
}

static const struct {
    const char *name, *doc;
} algo_docs[] = {
    {"bayesian", "Gaussian-process Bayesian optimisation, every trial at the full budget (TAO's "
                 "default; alias b)"},
    {"hyperband", "Hyperband: brackets of successive halving by automl_R and automl_nu (alias h)"},
    {"asha", "asynchronous successive halving: promotes as rungs fill, no waiting on brackets"},
    {"bohb", "Hyperband whose new configurations come from a density model of the good ones"},
    {"dehb", "Hyperband whose new configurations evolve by differential evolution per budget"},
    {"random", "random configurations at the full budget (a baseline)"},
    {"hyperband_es", "Hyperband whose trials are also stopped between rungs by their learning "
                     "curves (TAO's name)"},
};

static int topic_algorithms(FILE *f)
{
    fprintf(f, "AutoML algorithms (hone automl start --algorithm A; TAO's automl_algorithm):\n\n");
    for (size_t i = 0; hone_algo_names[i]; i++) {
        const char *doc = "";
        for (size_t j = 0; j < HONE_ARRAY_LEN(algo_docs); j++)
            if (!strcmp(algo_docs[j].name, hone_algo_names[i]))
                doc = algo_docs[j].doc;
        fprintf(f, "  %-13s %s\n", hone_algo_names[i], doc);
    }
    fprintf(f,
            "\nThe budget: --max-recommendations (trials), --R and --nu (Hyperband, BOHB, DEHB,\n"
            "ASHA), --epoch-multiplier (epochs per budget unit), --max-parallel.\n");
    return 0;
}

static int topic_formats(FILE *f)
{
    const char *const *l = cli_values_of("format");
    fprintf(f, "Dataset formats (hone dataset create --format F; the spec's data.format):\n\n");
    for (size_t i = 0; l && l[i]; i++)
        fprintf(f, "  %s\n", l[i]);
    fprintf(
        f, "\nidx: Fashion-MNIST/MNIST files ({train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]);\n"
           "image_folder: ROOT/[train|val|test/]CLASS/IMAGE; kitti: images/ and labels/ with\n"
           "KITTI lines (object_detection, detectnet_v2). Dataset types:");
    l = cli_values_of("type");
    for (size_t i = 0; l && l[i]; i++)
        fprintf(f, " %s", l[i]);
    fprintf(f, ".\n");
    return 0;
}

static int topic_networks(FILE *f)
{
    fprintf(f, "Networks (hone experiment create --network ARCH; the spec's network):\n\n");
    for (int i = 0; i < HONE_SPEC_NNETS; i++) {
        int n = 0;
        for (size_t j = 0; j < hone_spec_nkeys(); j++) {
            const hone_spec_key *k = hone_spec_key_at(j);
            n += k->user && (k->networks >> i & 1u);
        }
        fprintf(f, "  %-14s %d spec keys; its metric (kpi): %s\n", hone_spec_networks[i], n,
                !strcmp(hone_spec_networks[i], "detectnet_v2") ? "val_map" : "val_accuracy");
    }
    fprintf(f, "\nMetrics an experiment may optimise (--metric):");
    for (size_t i = 0; cli_metric_names[i]; i++)
        fprintf(f, " %s", cli_metric_names[i]);
    fprintf(f, "\n`hone help specs` lists each key with the networks that use it.\n");
    return 0;
}

static int topic_local(FILE *f)
{
    fprintf(f, "A controller and workers on this machine:\n\n");
    for (int i = 0; i < cli_nlocal_commands; i++) {
        const cli_command *c = &cli_local_commands[i];
        fprintf(f, "  hone %s %s\n      %s\n", c->noun, c->usage, c->summary);
    }
    fprintf(f, "\n`hone local` keeps its database, artifacts and logs in --data-dir (default\n"
               "./hone-data) and prints the URL to use; other commands find it through --url,\n"
               "$HONE_URL or `hone login`. Devices (--device):");
    const char *const *l = cli_values_of("device");
    for (size_t i = 0; l && l[i]; i++)
        fprintf(f, " %s", l[i]);
    fprintf(f, "; storage (--storage):");
    l = cli_values_of("storage");
    for (size_t i = 0; l && l[i]; i++)
        fprintf(f, " %s", l[i]);
    fprintf(f, ".\nRun `hone local --help` and `hone demo --help` for every option.\n");
    return 0;
}

const cli_help_topic cli_help_topics[] = {
    {"specs", "every spec key: type, range, default, networks", topic_specs},
    {"algorithms", "the AutoML algorithms", topic_algorithms},
    {"formats", "dataset formats and types", topic_formats},
    {"networks", "the networks and their metrics", topic_networks},
    {"local", "hone local and hone demo", topic_local},
    {NULL, NULL, NULL},
};

const cli_help_topic *cli_help_topic_find(const char *name)
{
    for (size_t i = 0; name && cli_help_topics[i].name; i++)
        if (!strcmp(cli_help_topics[i].name, name))
            return &cli_help_topics[i];
    return NULL;
}
