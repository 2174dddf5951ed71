/* JSON request bodies through the api/ server: content type, malformed JSON naming line and
 * column, depth and duplicate limits, and hone_json_check errors that name the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_test_server.h"

int test_json_bodies(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_post_json(&c, "/json", "application/json; charset=utf-8", "{\"a\":[1,2]}", &r) == 0);
    CHECK(r.status == 201 && !strcmp(r.body, "{\"a\":[1,2]}"));
    tc_response_free(&r);
    CHECK(hts_post_json(&c, "/json", "text/plain", "{}", &r) == 0);
    CHECK(hts_error_is(&r, 415, "unsupported_media_type", NULL));
    tc_response_free(&r);
    CHECK(hts_post_json(&c, "/json", "application/json", "{\"a\":\n  [1,}", &r) == 0);
    CHECK(hts_error_is(&r, 400, "bad_request", NULL) && strstr(r.body, "line 2"));
    tc_response_free(&r);
    CHECK(hts_post_json(&c, "/json", "application/json", "[1]", &r) == 0);
    CHECK(hts_error_is(&r, 422, "unprocessable_entity", NULL) && strstr(r.body, "JSON object"));
    tc_response_free(&r);
    CHECK(hts_post_json(&c, "/json", "application/json", "{\"a\":[[[[[[[[[[1]]]]]]]]]]}", &r) == 0);
    CHECK(hts_error_is(&r, 400, "bad_request", NULL) && strstr(r.body, "nested"));
    tc_response_free(&r);
    CHECK(hts_post_json(&c, "/json", "application/json", "{\"a\":1,\"a\":2}", &r) == 0);
    CHECK(hts_error_is(&r, 400, "bad_request", NULL));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_json_check(void)
{
    static const struct {
        const char *body;
        int status;
        const char *field, *needle;
    } cases[] = {
        {"{\"kind\":\"train\",\"name\":\"a\",\"epochs\":3,\"spec\":{\"lr\":0.1}}", 204, NULL, NULL},
        {"{\"kind\":\"train\",\"colour\":1}", 422, "colour", "unknown"},
        {"{\"kind\":\"train\",\"epochs\":\"3\"}", 422, "epochs", "integer"},
        {"{\"kind\":\"train\",\"epochs\":2.5}", 422, "epochs", "integer"},
        {"{\"name\":\"x\"}", 422, "kind", "required"},
        {"{\"kind\":\"train\",\"name\":\"toolongname\"}", 422, "name", "at most 8"},
        {"{\"kind\":\"train\",\"name\":\"\"}", 422, "name", "at least 1"},
        {"{\"kind\":\"dance\"}", 422, "kind", "one of: train evaluate export"},
        {"{\"kind\":\"train\",\"epochs\":1000}", 422, "epochs", "between 1 and 100"},
        {"{\"kind\":\"train\",\"spec\":{\"lr\":5}}", 422, "spec.lr", "between"},
        {"{\"kind\":\"train\",\"spec\":{\"mom\":1,\"lr\":0.5}}", 422, "spec.mom", "unknown"},
        {"{\"kind\":\"train\",\"spec\":[]}", 422, "spec", "object"},
    };
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    for (size_t i = 0; i < HONE_ARRAY_LEN(cases); i++) {
        CHECK(hts_post_json(&c, "/validate", "application/json", cases[i].body, &r) == 0);
        if (cases[i].status == 204) {
            CHECK(r.status == 204);
        } else {
            CHECK(hts_error_is(&r, 422, "unprocessable_entity", cases[i].field));
            CHECK(strstr(r.body, cases[i].needle));
        }
        tc_response_free(&r);
    }
    tc_close(&c);
    /* without a response: just the verdict */
    json_t *ok = json_pack("{s:s}", "kind", "export");
    json_t *bad = json_pack("{s:i}", "kind", 1);
    CHECK(hone_json_check(ok, job_fields, HONE_ARRAY_LEN(job_fields), NULL) == 0);
    CHECK(hone_json_check(bad, job_fields, HONE_ARRAY_LEN(job_fields), NULL) == HONE_EINVAL);
    json_decref(ok);
    json_decref(bad);
    return 0;
}
