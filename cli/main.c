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

static void usage_all(FILE *f)
{
    fprintf(f, "usage: hone [--url URL] [--token T] [--json] COMMAND ...\n\ncommands:\n");
    for (size_t t = 0; t < HONE_ARRAY_LEN(tables); t++)
        for (int i = 0; i < *tables[t].n; i++) {
            const cli_command *c = &tables[t].cmds[i];
            char head[64];
            snprintf(head, sizeof(head), "%s%s%s", c->noun, c->verb ? " " : "",
                     c->verb ? c->verb : "");
            fprintf(f, "  hone %-28s %s\n", head, c->summary);
        }
    fprintf(f, "  hone %-28s %s\n", "completion bash", "print a bash completion script");
    fprintf(f, "\nRun `hone COMMAND --help` for a command's options. The controller URL comes\n"
               "from --url, then $HONE_URL, then the url `hone login` saved, then\n"
               "http://127.0.0.1:8080; the token from --token, then $HONE_TOKEN, then the one\n"
               "`hone login` saved for that url.\n");
}

static void usage_cmd(FILE *f, const cli_command *c)
{
    fprintf(f, "usage: hone %s%s%s %s\n%s\n\noptions:\n", c->noun, c->verb ? " " : "",
            c->verb ? c->verb : "", c->usage, c->summary);
    for (int i = 0; i < c->nopts; i++)
        fprintf(f, "  --%-22s %s%s\n", c->opts[i].name, c->opts[i].help,
                c->opts[i].required ? " (required)" : "");
    for (int i = 0; i < cli_nglobal_opts; i++)
        fprintf(f, "  --%-22s %s\n", cli_global_opts[i].name, cli_global_opts[i].help);
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

static void list_verbs(FILE *f, const char *noun)
{
    fprintf(f, "hone %s commands:", noun);
    for (size_t t = 0; t < HONE_ARRAY_LEN(tables); t++)
        for (int i = 0; i < *tables[t].n; i++)
            if (strcmp(tables[t].cmds[i].noun, noun) == 0 && tables[t].cmds[i].verb)
                fprintf(f, " %s", tables[t].cmds[i].verb);
    fprintf(f, "\n");
}

int main(int argc, char **argv)
{
    const cli_command *cmd;
    cli_args args;
    cli_ctx ctx = {0};
    char err[1024], self[PATH_MAX], *slash, cfg_url[2048], cfg_token[512];
    const char *url, *token;
    int known, first = 1, rc;
    ssize_t n;
    struct sigaction sa;

    /* Global options may come before the command: hone --url U job list. */
    while (first < argc && strncmp(argv[first], "--", 2) == 0 && argv[first][2] != '\0')
        first += strchr(argv[first], '=') || strcmp(argv[first], "--json") == 0 ||
                         strcmp(argv[first], "--help") == 0
                     ? 1
                     : 2;
    if (first >= argc || strcmp(argv[first], "help") == 0 || strcmp(argv[first], "-h") == 0) {
        usage_all(first >= argc && argc > 1 ? stderr : stdout);
        return first >= argc && argc > 1 ? 2 : 0;
    }
    if (strcmp(argv[first], "completion") == 0) {
        if (first + 1 >= argc || strcmp(argv[first + 1], "bash") != 0) {
            fprintf(stderr,
                    "usage: hone completion bash   (then: source <(hone completion bash))\n");
            return 2;
        }
        const cli_command *tabs[HONE_ARRAY_LEN(tables)];
        int ns[HONE_ARRAY_LEN(tables)];
        for (size_t t = 0; t < HONE_ARRAY_LEN(tables); t++)
            tabs[t] = tables[t].cmds, ns[t] = *tables[t].n;
        return cli_completion_bash(stdout, tabs, ns, (int)HONE_ARRAY_LEN(tables)) ? 1 : 0;
    }
    cmd = find_cmd(argv[first], first + 1 < argc ? argv[first + 1] : NULL, &known);
    if (!cmd) {
        if (known) {
            if (first + 1 < argc && strcmp(argv[first + 1], "--help") != 0)
                fprintf(stderr, "usage error: unknown command 'hone %s %s'\n", argv[first],
                        argv[first + 1]);
            list_verbs(stderr, argv[first]);
        } else {
            fprintf(stderr, "usage error: unknown command '%s' (run `hone help` for the list)\n",
                    argv[first]);
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
        usage_cmd(stdout, cmd);
        return 0;
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
    rc = cmd->run(&ctx);
    hone_rest_free(ctx.rest);
    curl_global_cleanup();
    return rc;
}
