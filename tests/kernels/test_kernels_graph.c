/* tests/kernels/test_kernels_graph.c: a captured step replays its work on every launch and walks
 * through data with device counters, exactly as the trainer uses it; capture alone runs nothing. */
#include "tk.h"

typedef struct {
    hone_kctx *k;
    float *acc, *one;
    int32_t *base;
} step_arg;

static void step(void *p)
{
    step_arg *a = p;
    hone_k_axpy(a->k, 2.0f, a->one, a->acc, 4);
    hone_k_counter_add(a->k, a->base, 3);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    float ones[4] = {1, 1, 1, 1}, *out;
    int32_t zero = 0, base = -1;
    step_arg a = {k, tk_dev(k, NULL, 4), tk_dev(k, ones, 4), tk_dev_bytes(k, &zero, 4)};
    TK_OK(hone_k_fill(k, a.acc, 0.0f, 4));
    hone_kgraph *g = NULL;
    TK_OK(hone_kgraph_capture(k, step, &a, &g));
    TK_EXPECT(g != NULL);
    out = tk_get(k, a.acc, 4);
    TK_EXPECT(out[0] == 0.0f); /* capture records only */
    free(out);
    for (int i = 0; i < 5; i++)
        TK_OK(hone_kgraph_launch(k, g));
    out = tk_get(k, a.acc, 4);
    TK_EXPECT(out[0] == 10.0f && out[3] == 10.0f);
    free(out);
    hone_k_download(k, &base, a.base, 4);
    TK_EXPECT(base == 15);
    hone_kgraph_free(g);
    hone_k_free(k, a.acc);
    hone_k_free(k, a.one);
    hone_k_free(k, a.base);
    return tk_finish(k, "test_kernels_graph");
}
