/* man: hone(1), the manual page written at build time (cli/hone.1) from the same tables as `hone
 * help`: every command with its options, then every help topic's text. Pure output to a FILE. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Text for roff: backslashes and dashes escaped, a line starting with '.' or '\'' guarded. */
static void man_text(FILE *f, const char *s)
{
    int bol = 1;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", f);
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
        bol = *s == '\n';
    }
}

static void man_command(FILE *f, const cli_command *c)
{
    char head[512];
    snprintf(head, sizeof head, "hone %s%s%s %s", c->noun, c->verb ? " " : "",
             c->verb ? c->verb : "", c->usage);
    fputs(".TP\n.B ", f);
    man_text(f, head);
    fputc('\n', f);
    man_text(f, c->summary);
    fputc('\n', f);
    for (int i = 0; i < c->nopts; i++) {
        char opt[256];
        const char *help = c->opts[i].help, *sp = strstr(help, "  ");
        snprintf(opt, sizeof opt, "\\-\\-%s", c->opts[i].name);
        fprintf(f, ".RS\n.TP\n.B %s", opt);
        if (sp && sp > help) { /* "VALUE  what it does": the value's name after the option */
            fputs(" ", f);
            fwrite(help, 1, (size_t)(sp - help), f);
        }
        fputc('\n', f);
        man_text(f, sp ? sp + 2 : help);
        fprintf(f, "%s\n.RE\n", c->opts[i].required ? " (required)" : "");
    }
}

int cli_man_page(FILE *f, const cli_command *const *tabs, const int *ns, int ntabs)
{
    fprintf(f, ".TH HONE 1 \"\" \"hone %s\" \"Hone manual\"\n", hone_version());
    fputs(".SH NAME\nhone \\- AutoML and experiment orchestration from the command line\n"
          ".SH SYNOPSIS\n.B hone\n[\\-\\-url URL] [\\-\\-token T] [\\-\\-json] COMMAND ...\n"
          ".SH DESCRIPTION\n",
          f);
    man_text(f, "Every command takes --json (machine output; errors as one JSON object on "
                "stderr), --help and --version. Wherever an ID is asked for, the name of the "
                "dataset, experiment or job works too. Exit status: 0 ok, 1 the controller or the "
                "work failed, 2 a usage error.\n");
    fputs(".SH COMMANDS\n", f);
    for (int t = 0; t < ntabs; t++)
        for (int i = 0; i < ns[t]; i++)
            man_command(f, &tabs[t][i]);
    fputs(".SH GLOBAL OPTIONS\n", f);
    for (int i = 0; i < cli_nglobal_opts; i++) {
        const char *help = cli_global_opts[i].help, *sp = strstr(help, "  ");
        fprintf(f, ".TP\n.B \\-\\-%s\n", cli_global_opts[i].name);
        man_text(f, sp ? sp + 2 : help);
        fputc('\n', f);
    }
    for (size_t i = 0; cli_help_topics[i].name; i++) {
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m)
            return HONE_EIO;
        cli_help_topics[i].print(m);
        fclose(m);
        fputs(".SH ", f);
        for (const char *p = cli_help_topics[i].name; *p; p++)
            fputc(*p >= 'a' && *p <= 'z' ? *p - 32 : *p, f);
        fputs("\n.nf\n", f);
        man_text(f, text);
        fputs(".fi\n", f);
        free(text);
    }
    fputs(".SH ENVIRONMENT\n.TP\n.B HONE_URL\nthe controller's URL\n.TP\n.B HONE_TOKEN\n"
          "a bearer token\n.TP\n.B HONE_CONFIG\nthe file hone login writes\n"
          ".SH SEE ALSO\nhone help TOPIC, hone COMMAND \\-\\-help, docs/rest.md\n",
          f);
    return ferror(f) ? HONE_EIO : HONE_OK;
}
