/* test_wire: every job kind and status round-trips through its wire name, unknown names and
 * out-of-range values are refused, and the names are the ones the store's CHECK constraints and
 * the REST API use. */
#include <string.h>

#include "check.h"
#include "hone.h"
#include "wire.h"

int main(void)
{
    const char *kinds[] = {"train", "automl", "convert", "evaluate", "inference", "export"};
    const char *statuses[] = {"queued", "running",  "paused", "done",
                              "failed", "canceled", "stopped"};
    CHECK(HONE_KIND_COUNT == sizeof kinds / sizeof *kinds);
    CHECK(HONE_STATUS_COUNT == sizeof statuses / sizeof *statuses);
    for (int i = 0; i < HONE_KIND_COUNT; i++) {
        hone_kind k = HONE_KIND_COUNT;
        CHECK(!strcmp(hone_kind_name((hone_kind)i), kinds[i]));
        CHECK(hone_kind_parse(kinds[i], &k) == HONE_OK && k == (hone_kind)i);
    }
    for (int i = 0; i < HONE_STATUS_COUNT; i++) {
        hone_status s = HONE_STATUS_COUNT;
        CHECK(!strcmp(hone_status_name((hone_status)i), statuses[i]));
        CHECK(hone_status_parse(statuses[i], &s) == HONE_OK && s == (hone_status)i);
    }
    hone_kind k = HONE_KIND_EXPORT;
    CHECK(hone_kind_parse("Train", &k) == HONE_EINVAL && k == HONE_KIND_EXPORT);
    CHECK(hone_kind_parse("", &k) == HONE_EINVAL);
    CHECK(hone_kind_parse(NULL, &k) == HONE_EINVAL);
    CHECK(hone_kind_parse("trainx", &k) == HONE_EINVAL);
    hone_status s = HONE_STATUS_DONE;
    CHECK(hone_status_parse("cancelled", &s) == HONE_EINVAL && s == HONE_STATUS_DONE);
    CHECK(!strcmp(hone_kind_name(HONE_KIND_COUNT), "?"));
    CHECK(!strcmp(hone_kind_name((hone_kind)-1), "?"));
    CHECK(!strcmp(hone_status_name(HONE_STATUS_COUNT), "?"));
    CHECK(hone_status_is_final(HONE_STATUS_DONE) && hone_status_is_final(HONE_STATUS_STOPPED));
    CHECK(!hone_status_is_final(HONE_STATUS_PAUSED) && !hone_status_is_final(HONE_STATUS_QUEUED));
    CHECK(hone_kind_is_model_action(HONE_KIND_EXPORT) &&
          !hone_kind_is_model_action(HONE_KIND_TRAIN));
    return failures != 0;
}
