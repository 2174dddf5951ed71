/* hone: the command-line client. Finds the command (`hone NOUN VERB` or `hone local|demo`),
 * parses its options, opens the REST handle and runs it. Usage errors exit 2, server errors 1. */
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli.h"

static volatile sig_atomic_t cli_stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    cli_stop_flag = 1;
}

typedef struct cmd_table {
    const cli_command *cmds;
    const int *n;
} cmd_table;

static const cmd_table tables[] = {
    {cli_dataset_commands, &cli_ndataset_commands},
    {cli_experiment_commands, &cli_nexperiment_commands},
    {cli_job_commands, &cli_njob_commands},
    {cli_action_commands, &cli_naction_commands},
    {cli_server_commands, &cli_nserver_commands},
    {cli_user_commands, &cli_nuser_commands},
    {cli_local_commands, &cli_nlocal_commands},
};

/* The command tables as arrays, for help.c and completion.c. */
static void tables_flat(const cli_command **tabs, int *ns)
{
    for (size_t t = 0; t < HONE_ARRAY_LEN(tables); t++)
        tabs[t] = tables[t].cmds, ns[t] = *tables[t].n;
}

static const cli_command *find_cmd(const char *noun, const char *verb, int *noun_known)
{
    *noun_known = 0;
    for (size_t t = 0; t < HONE_ARRAY_LEN(tables); t++)
        for (int i = 0; i < *tables[t].n; i++) {
            const cli_command *c = &tables[t].cmds[i];
            if (strcmp(c->noun, noun) != 0)
                continue;
            *noun_known = 1;
            if (!c->verb || (verb && strcmp(c->verb, verb) == 0))
                return c;
        }
    return NULL;
}

/* The nearest noun (verb NULL) or verb of noun to word, for "did you mean". */
static const char *near_word(const char *noun, const char *word)
{
    const char *cands[128];
    size_t n = 0;
    if (!noun) {
        cands[n++] = "help";
        cands[n++] = "completion";
    }
    for (size_t t = 0; t < HONE_ARRAY_LEN(tables); t++)
        for (int i = 0; i < *tables[t].n && n < HONE_ARRAY_LEN(cands); i++) {
            const cli_command *c = &tables[t].cmds[i];
            if (!noun)
                cands[n++] = c->noun;
            else if (!strcmp(c->noun, noun) && c->verb)
                cands[n++] = c->verb;
        }
    return hone_suggest(word, cands, n);
}

/* `hone help [NOUN [VERB] | TOPIC]`: on stdout, exit 0; an unknown word is a usage error. */
static int help(int argc, char **argv, int at)
{
    const cli_command *tabs[HONE_ARRAY_LEN(tables)];
    int ns[HONE_ARRAY_LEN(tables)], known;
    tables_flat(tabs, ns);
    if (at >= argc) {
        cli_usage_all(stdout, tabs, ns, (int)HONE_ARRAY_LEN(tables));
        return 0;
    }
    const cli_help_topic *t = cli_help_topic_find(argv[at]);
    if (t)
        return t->print(stdout);
    const cli_command *c = find_cmd(argv[at], at + 1 < argc ? argv[at + 1] : NULL, &known);
    if (c) {
        cli_usage_cmd(stdout, c);
        return 0;
    }
    if (known && at + 1 >= argc) {
        cli_list_verbs(stdout, argv[at], tabs, ns, (int)HONE_ARRAY_LEN(tables));
        return 0;
    }
    const char *words[64], *near;
    size_t n = 0;
    for (size_t i = 0; cli_help_topics[i].name && n < HONE_ARRAY_LEN(words); i++)
        words[n++] = cli_help_topics[i].name;
    if (known) {
        near = near_word(argv[at], argv[at + 1]);
        fprintf(stderr, "usage error: unknown command 'hone %s %s'%s%s%s\n", argv[at], argv[at + 1],
                near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
        return 2;
    }
    near = hone_suggest(argv[at], words, n);
    if (!near)
        near = near_word(NULL, argv[at]);
    fprintf(stderr, "usage error: no command or help topic '%s'%s%s%s (topics:", argv[at],
            near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", words[i]);
    fprintf(stderr, ")\n");
    return 2;
}

/* `hone __complete KIND`: the ids and names bash completion offers, one a line, from a
 * controller that answers within a second; nothing at all otherwise. */
static int complete_ids(cli_ctx *c, const char *what)
{
    int kind = cli_resolve_kind(what);
    if (kind < 0 || !c->rest)
        return 0;
    json_t *all = cli_resolve_list(c, kind, 1), *o;
    size_t i;
    json_array_foreach(all, i, o)
    {
        const char *id = json_string_value(json_object_get(o, "id"));
        const char *name = json_string_value(json_object_get(o, "name"));
        if (id)
            printf("%s\n", id);
        /* a name completes too when it is one plain word (bash splits on spaces) */
        if (name && *name && !strpbrk(name, " \t\n\"'\\$`") && !cli_needs_escape(name))
            printf("%s\n", name);
    }
    json_decref(all);
    return 0;
}

static int run(int argc, char **argv)
{
    const cli_command *cmd;
    cli_args args;
    cli_ctx ctx = {0};
    char err[1024], self[PATH_MAX], *slash, cfg_url[2048], cfg_token[512];
    const char *url, *token;
    int known, first = 1, rc, asked_help = 0;
    ssize_t n;
    struct sigaction sa;

    /* Global options may come before the command: hone --url U job list. */
    while (first < argc && strncmp(argv[first], "--", 2) == 0 && argv[first][2] != '\0') {
        if (!strcmp(argv[first], "--version")) {
            printf("hone %s\n", hone_version());
            return 0;
        }
        asked_help |= !strcmp(argv[first], "--help");
        first += strchr(argv[first], '=') || strcmp(argv[first], "--json") == 0 ||
                         strcmp(argv[first], "--help") == 0
                     ? 1
                     : 2;
    }
    if (first >= argc) {
        const cli_command *tabs[HONE_ARRAY_LEN(tables)];
        int ns[HONE_ARRAY_LEN(tables)];
        tables_flat(tabs, ns);
        /* `hone` and `hone --help` are help (stdout, 0); `hone --json` alone lacks a command */
        if (!asked_help && argc > 1) {
            fprintf(stderr, "usage error: no command given (run `hone help` for the list)\n"
                            "usage: hone [--url URL] [--token T] [--json] COMMAND ...\n");
            return 2;
        }
        cli_usage_all(stdout, tabs, ns, (int)HONE_ARRAY_LEN(tables));
        return 0;
    }
    if (strcmp(argv[first], "help") == 0 || strcmp(argv[first], "-h") == 0)
        return help(argc, argv, first + 1);
    if (strcmp(argv[first], "__man") == 0) { /* the build writes cli/hone.1 with it */
        const cli_command *tabs[HONE_ARRAY_LEN(tables)];
        int ns[HONE_ARRAY_LEN(tables)];
        tables_flat(tabs, ns);
        return cli_man_page(stdout, tabs, ns, (int)HONE_ARRAY_LEN(tables)) ? 1 : 0;
    }
    if (strcmp(argv[first], "completion") == 0) {
        if (first + 1 >= argc || strcmp(argv[first + 1], "bash") != 0) {
            fprintf(stderr,
                    "usage error: hone completion bash   (then: source <(hone completion bash))\n");
            return 2;
        }
        const cli_command *tabs[HONE_ARRAY_LEN(tables)];
        int ns[HONE_ARRAY_LEN(tables)];
        tables_flat(tabs, ns);
        return cli_completion_bash(stdout, tabs, ns, (int)HONE_ARRAY_LEN(tables)) ? 1 : 0;
    }
    cmd = find_cmd(argv[first], first + 1 < argc ? argv[first + 1] : NULL, &known);
    if (!cmd && !strcmp(argv[first], "__complete")) {
        static const cli_command complete = {
            "__complete", NULL, NULL, NULL, 0, 1, 1, "KIND", "ids for bash completion", 0};
        cmd = &complete;
    }
    if (!cmd) {
        const cli_command *tabs[HONE_ARRAY_LEN(tables)];
        int ns[HONE_ARRAY_LEN(tables)];
        tables_flat(tabs, ns);
        if (known && (first + 1 >= argc || !strcmp(argv[first + 1], "--help") ||
                      !strcmp(argv[first + 1], "-h"))) {
            /* `hone job --help` asks for the verbs; a bare `hone job` lacks one */
            int h = first + 1 < argc || asked_help;
            if (!h)
                fprintf(stderr, "usage error: 'hone %s' needs a command\n", argv[first]);
            cli_list_verbs(h ? stdout : stderr, argv[first], tabs, ns, (int)HONE_ARRAY_LEN(tables));
            return h ? 0 : 2;
        }
        const char *near =
            near_word(known ? argv[first] : NULL, known ? argv[first + 1] : argv[first]);
        if (known) {
            fprintf(stderr, "usage error: unknown command 'hone %s %s'%s%s%s\n", argv[first],
                    argv[first + 1], near ? " (did you mean '" : "", near ? near : "",
                    near ? "'?)" : "");
            cli_list_verbs(stderr, argv[first], tabs, ns, (int)HONE_ARRAY_LEN(tables));
        } else {
            fprintf(
                stderr, "usage error: unknown command '%s'%s%s%s (run `hone help` for the list)\n",
                argv[first], near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        }
        return 2;
    }
    {
        /* The command's own arguments, with any global options given before the command. */
        int skip = cmd->verb ? 2 : 1, m = 0;
        char **rest = hone_xcalloc((size_t)argc + 1, sizeof(char *));
        for (int i = 1; i < first; i++)
            rest[m++] = argv[i];
        for (int i = first + skip; i < argc; i++)
            rest[m++] = argv[i];
        rc = cli_args_parse(cmd->opts, cmd->nopts, cmd->npos_min, cmd->npos_max, m, rest, &args,
                            err, sizeof(err));
        free(rest);
    }
    if (rc != 0) {
        fprintf(stderr, "usage error: %s\n", err);
        fprintf(stderr, "usage: hone %s%s%s %s\n", cmd->noun, cmd->verb ? " " : "",
                cmd->verb ? cmd->verb : "", cmd->usage);
        return 2;
    }
    if (cli_flag(&args, "help")) {
        cli_usage_cmd(stdout, cmd);
        return 0;
    }
    if (cli_flag(&args, "version")) {
        printf("hone %s\n", hone_version());
        return 0;
    }
    if (cli_values_check(&args, err, sizeof err) != 0) {
        fprintf(stderr, "usage error: %s\n", err);
        return 2;
    }
    /* --url, $HONE_URL, then the url `hone login` saved; the saved token goes only to that url */
    cli_config_read(cfg_url, sizeof cfg_url, cfg_token, sizeof cfg_token);
    url = cli_arg(&args, "url") ? cli_arg(&args, "url") : getenv("HONE_URL");
    if (!url || !url[0])
        url = cfg_url[0] ? cfg_url : "http://127.0.0.1:8080";
    token = cli_arg(&args, "token") ? cli_arg(&args, "token") : getenv("HONE_TOKEN");
    if ((!token || !token[0]) && cfg_token[0] && !strcmp(url, cfg_url))
        token = cfg_token;
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        ctx.bin_dir = self;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ctx.url = url;
    ctx.json = cli_flag(&args, "json") > 0;
    ctx.a = &args;
    ctx.stop = &cli_stop_flag;
    if (!cmd->local && hone_rest_new(url, token, &ctx.rest) != 0) {
        fprintf(stderr, "usage error: --url must be an http:// URL (got '%s')\n", url);
        curl_global_cleanup();
        return 2;
    }
    if (ctx.rest)
        hone_rest_set_abort(ctx.rest, &cli_stop_flag);
    if (!cmd->run)
        rc = complete_ids(&ctx, args.pos[0]);
    else if ((rc = cli_resolve_args(&ctx, cmd)) == 0)
        rc = cmd->run(&ctx);
    cli_resolve_free();
    hone_rest_free(ctx.rest);
    curl_global_cleanup();
    return rc;
}

int main(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        json |= !strcmp(argv[i], "--json");
    if (json) /* every error as one JSON object on stderr, whichever file printed it */
        cli_json_errors_begin();
    int rc = run(argc, argv);
    return json ? cli_json_errors_end(rc) : rc;
}
