/* test_cli_args: the hone command's option parser (values, flags, repeats, required options,
 * errors that name the fix) and its small grammars: dotted key=value spec overrides and --param
 * search-space entries. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "check.h"

static const cli_opt opts[] = {
    {"name", CLI_VALUE, "NAME  a name", 1},
    {"spec", CLI_MULTI, "KEY=VALUE  override", 0},
    {"wait", CLI_FLAG, "  wait", 0},
    {"count", CLI_VALUE, "N  a count", 0},
};
#define NOPTS ((int)HONE_ARRAY_LEN(opts))

static void test_values_flags_repeats(void)
{
    char *argv[] = {"--name", "a",      "--spec=x.y=1", "--spec",     "z=2",      "--wait",
                    "ID",     "--json", "--url",        "http://h:1", "--count=7"};
    cli_args a;
    char err[256];
    const char **v;
    long n = 0;

    CHECK(cli_args_parse(opts, NOPTS, 1, 1, 11, argv, &a, err, sizeof(err)) == 0);
    CHECK(strcmp(cli_arg(&a, "name"), "a") == 0);
    CHECK(cli_multi(&a, "spec", &v) == 2 && strcmp(v[0], "x.y=1") == 0 && strcmp(v[1], "z=2") == 0);
    CHECK(cli_flag(&a, "wait") == 1);
    CHECK(cli_flag(&a, "json") == 1);
    CHECK(strcmp(cli_arg(&a, "url"), "http://h:1") == 0);
    CHECK(a.npos == 1 && strcmp(a.pos[0], "ID") == 0);
    CHECK(cli_arg_int(&a, "count", 1, 10, &n, err, sizeof(err)) == 0 && n == 7);
    CHECK(cli_arg_int(&a, "count", 1, 5, &n, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "--count must be an integer from 1 to 5"));
    CHECK(cli_arg(&a, "token") == NULL);
}

static void test_errors_name_the_fix(void)
{
    char *a1[] = {"--name", "a", "--bogus"};
    char *a2[] = {"--name"};
    char *a3[] = {"--spec", "k=v"};
    char *a4[] = {"--name", "a", "--wait=yes"};
    char *a5[] = {"--name", "a", "P1", "P2"};
    char *a6[] = {"--help"};
    char *a7[] = {"--name", "a", "--", "--not-an-option"};
    cli_args a;
    char err[256];

    CHECK(cli_args_parse(opts, NOPTS, 0, 1, 3, a1, &a, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "unknown option --bogus"));
    CHECK(cli_args_parse(opts, NOPTS, 0, 1, 1, a2, &a, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "--name NAME"));
    CHECK(cli_args_parse(opts, NOPTS, 0, 1, 2, a3, &a, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "missing --name (add --name NAME)"));
    CHECK(cli_args_parse(opts, NOPTS, 0, 1, 3, a4, &a, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "takes no value"));
    CHECK(cli_args_parse(opts, NOPTS, 0, 1, 4, a5, &a, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "unexpected argument 'P2'"));
    CHECK(cli_args_parse(opts, NOPTS, 1, 1, 2, a1, &a, err, sizeof(err)) == HONE_EINVAL);
    /* --help skips the required checks so usage can be shown */
    CHECK(cli_args_parse(opts, NOPTS, 1, 1, 1, a6, &a, err, sizeof(err)) == 0 &&
          cli_flag(&a, "help"));
    CHECK(cli_args_parse(opts, NOPTS, 0, 1, 4, a7, &a, err, sizeof(err)) == 0 && a.npos == 1 &&
          strcmp(a.pos[0], "--not-an-option") == 0);
}

static void test_dotted(void)
{
    json_t *o = json_object();
    char err[256];

    CHECK(cli_set_dotted(o, "train.lr=0.01", err, sizeof(err)) == 0);
    CHECK(cli_set_dotted(o, "train.epochs=10", err, sizeof(err)) == 0);
    CHECK(cli_set_dotted(o, "train.optimizer=adamw", err, sizeof(err)) == 0);
    CHECK(cli_set_dotted(o, "model.batchnorm=true", err, sizeof(err)) == 0);
    CHECK(cli_set_dotted(o, "name=\"42\"", err, sizeof(err)) == 0);
    CHECK(json_is_real(json_object_get(json_object_get(o, "train"), "lr")));
    CHECK(json_integer_value(json_object_get(json_object_get(o, "train"), "epochs")) == 10);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(o, "train"), "optimizer")),
                 "adamw") == 0);
    CHECK(json_is_true(json_object_get(json_object_get(o, "model"), "batchnorm")));
    CHECK(json_is_string(json_object_get(o, "name")));
    CHECK(cli_set_dotted(o, "novalue", err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "key=value"));
    CHECK(cli_set_dotted(o, "=3", err, sizeof(err)) == HONE_EINVAL);
    json_decref(o);
}

static void test_param(void)
{
    char name[64], err[256];
    json_t *e;

    CHECK(cli_param_parse("train.lr=float:1e-4:0.1:log", name, sizeof(name), &e, err,
                          sizeof(err)) == 0);
    CHECK(strcmp(name, "train.lr") == 0);
    CHECK(strcmp(json_string_value(json_object_get(e, "type")), "float") == 0);
    CHECK(json_real_value(json_object_get(e, "min")) == 1e-4);
    CHECK(json_is_true(json_object_get(e, "log")));
    json_decref(e);
    CHECK(cli_param_parse("train.batch_size=int:32:256", name, sizeof(name), &e, err,
                          sizeof(err)) == 0);
    CHECK(json_integer_value(json_object_get(e, "max")) == 256 && !json_object_get(e, "log"));
    json_decref(e);
    CHECK(cli_param_parse("train.optimizer=sgd,adamw", name, sizeof(name), &e, err, sizeof(err)) ==
          0);
    CHECK(json_array_size(json_object_get(e, "values")) == 2);
    json_decref(e);
    CHECK(cli_param_parse("model.batchnorm=bool", name, sizeof(name), &e, err, sizeof(err)) == 0);
    json_decref(e);
    CHECK(cli_param_parse("train.lr=float:1", name, sizeof(name), &e, err, sizeof(err)) ==
              HONE_EINVAL &&
          strstr(err, "float:LO:HI") && e == NULL);
    CHECK(cli_param_parse("train.lr=float:0.1:0.01", name, sizeof(name), &e, err, sizeof(err)) ==
          HONE_EINVAL);
    CHECK(cli_param_parse("train.lr=float:0:1:log", name, sizeof(name), &e, err, sizeof(err)) ==
          HONE_EINVAL);
    CHECK(cli_param_parse("train.lr=normal:0:1", name, sizeof(name), &e, err, sizeof(err)) ==
              HONE_EINVAL &&
          strstr(err, "unknown type 'normal'"));
    CHECK(cli_param_parse("nothing", name, sizeof(name), &e, err, sizeof(err)) == HONE_EINVAL);
    /* a condition: swept only while the parent holds one of the values */
    CHECK(cli_param_parse("train.momentum=float:0.5:0.99@train.optimizer=sgd", name, sizeof(name),
                          &e, err, sizeof(err)) == 0);
    CHECK(strcmp(name, "train.momentum") == 0 &&
          json_real_value(json_object_get(e, "max")) == 0.99);
    json_t *want = json_pack("{s:[s]}", "train.optimizer", "sgd");
    CHECK(json_equal(json_object_get(e, "condition"), want));
    json_decref(want);
    json_decref(e);
    CHECK(cli_param_parse("x=a,b@flag=true|false", name, sizeof(name), &e, err, sizeof(err)) == 0);
    want = json_pack("{s:[b,b]}", "flag", 1, 0);
    CHECK(json_equal(json_object_get(e, "condition"), want) &&
          json_array_size(json_object_get(e, "values")) == 2);
    json_decref(want);
    json_decref(e);
    CHECK(cli_param_parse("x=bool@flag", name, sizeof(name), &e, err, sizeof(err)) == HONE_EINVAL &&
          strstr(err, "@PARENT=V1|V2") && e == NULL);
    CHECK(cli_param_parse("x=bool@=a", name, sizeof(name), &e, err, sizeof(err)) == HONE_EINVAL);
}

static void test_cells(void)
{
    char buf[64];
    json_t *v = json_real(0.91234);
    CHECK(strcmp(cli_cell(v, buf, sizeof(buf)), "0.9123") == 0);
    json_decref(v);
    CHECK(strcmp(cli_cell(NULL, buf, sizeof(buf)), "-") == 0);
    cli_fmt_seconds(3725, buf, sizeof(buf));
    CHECK(strcmp(buf, "1h02m") == 0);
    cli_fmt_seconds(125, buf, sizeof(buf));
    CHECK(strcmp(buf, "2m05s") == 0);
}

int main(void)
{
    test_values_flags_repeats();
    test_errors_name_the_fix();
    test_dotted();
    test_param();
    test_cells();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
