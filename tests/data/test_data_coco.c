/* tests/data/test_data_coco.c: COCO instances JSON and folders. The parser on a good file (sparse
 * category ids numbered densely by id, names kept, images ordered by file_name, crowd boxes as
 * ignore regions, a box overshooting an edge by a fraction of a pixel clamped) and on each defect,
 * refused with a problem naming the file and the annotation, image or category id; several
 * problems all counted. Then folders built here in the three layouts: stats, a missing image, a
 * size that disagrees with the JSON, splits whose categories differ, a link out of the folder,
 * and the packed boxes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spng.h>

#include "check.h"
#include "data.h"

static char base[64];

static int parse(const char *text, hone_data_coco_file **f, hone_data_kitti_problems *pr)
{
    return hone_data_coco_parse((const uint8_t *)text, strlen(text), "ann.json", f, pr);
}

#define CATS "\"categories\": [{\"id\": 18, \"name\": \"dog\"}, {\"id\": 1, \"name\": \"person\"}]"

static void test_parse_good(void)
{
    const char *t =
        "{\"info\": {}, \"images\": [{\"id\": 7, \"file_name\": \"b.png\", \"width\": 40, "
        "\"height\": 30}, {\"id\": 3, \"file_name\": \"a.png\", \"width\": 20, \"height\": 10}],"
        "\"annotations\": [{\"id\": 1, \"image_id\": 7, \"category_id\": 18, \"bbox\": [1, 2, "
        "3.5, 4], \"iscrowd\": 0, \"segmentation\": [[1, 2, 3]]}, {\"id\": 2, \"image_id\": 3, "
        "\"category_id\": 1, \"bbox\": [0, 0, 20.4, 10]}, {\"id\": 5, \"image_id\": 7, "
        "\"category_id\": 1, \"bbox\": [10, 10, 5, 5], \"iscrowd\": 1}]," CATS "}";
    hone_data_coco_file *f;
    hone_data_kitti_problems pr = {0};
    REQUIRE(parse(t, &f, &pr) == HONE_OK && pr.count == 0);
    /* categories by id: 1 person (class 0), 18 dog (class 1) */
    REQUIRE(f->ncats == 2);
    CHECK(f->cat_ids[0] == 1 && !strcmp(f->cat_names[0], "person"));
    CHECK(f->cat_ids[1] == 18 && !strcmp(f->cat_names[1], "dog"));
    /* images by file name */
    REQUIRE(f->nimages == 2);
    CHECK(f->images[0].id == 3 && !strcmp(f->images[0].file_name, "a.png"));
    CHECK(f->images[0].width == 20 && f->images[0].height == 10 && f->images[0].nbox == 1);
    CHECK(f->images[1].id == 7 && f->images[1].nbox == 2);
    const hone_data_box *b = f->boxes + f->images[0].box0;
    CHECK(b[0].cls == 0 && b[0].x1 == 0 && b[0].x2 == 20.0f && b[0].y2 == 10); /* clamped */
    b = f->boxes + f->images[1].box0;
    CHECK(b[0].cls == 1 && b[0].x1 == 1 && b[0].y1 == 2 && b[0].x2 == 4.5f && b[0].y2 == 6);
    CHECK(b[1].cls == HONE_DATA_CROWD(0) && b[1].x1 == 10 && b[1].x2 == 15); /* a person crowd */
    CHECK(f->ann_ids[f->images[1].box0 + 1] == 5 && f->crowd == 1 && f->nboxes == 3);
    hone_data_coco_file_free(f);
}

/* A file with one defect: refused, its one problem starts "ann.json: " and holds want. */
static void expect(const char *images, const char *anns, const char *cats, const char *want)
{
    char t[4096];
    snprintf(t, sizeof t, "{\"images\": [%s], \"annotations\": [%s], \"categories\": [%s]}", images,
             anns, cats);
    hone_data_coco_file *f = (hone_data_coco_file *)1;
    hone_data_kitti_problems pr = {0};
    int rc = parse(t, &f, &pr);
    if (rc != HONE_EPARSE || f != NULL || pr.count != 1 || strncmp(pr.msg[0], "ann.json: ", 10) ||
        !strstr(pr.msg[0], want)) {
        fprintf(stderr, "want '%s', got rc %d, %zu problems, '%s'\n", want, rc, pr.count,
                pr.kept ? pr.msg[0] : "");
        failures++;
    }
    hone_data_kitti_problems_clear(&pr);
}

#define IMG "{\"id\": 4, \"file_name\": \"x.png\", \"width\": 100, \"height\": 50}"
#define CAT "{\"id\": 3, \"name\": \"cat\"}"
#define ANN(x) "{\"id\": 9, \"image_id\": 4, \"category_id\": 3, " x "}"

static void test_parse_defects(void)
{
    /* the good base, for reference */
    hone_data_coco_file *f;
    char t[1024];
    snprintf(t, sizeof t,
             "{\"images\": [" IMG
             "], \"annotations\": [" ANN("\"bbox\": [0, 0, 100, 50]") "], \"categories\": [" CAT
                                                                      "]}");
    REQUIRE(parse(t, &f, NULL) == HONE_OK);
    hone_data_coco_file_free(f);
    /* images */
    expect(IMG ", {\"id\": 4, \"file_name\": \"y.png\", \"width\": 1, \"height\": 1}", "", CAT,
           "image 4: id listed twice (x.png and y.png)");
    expect(IMG ", {\"id\": 5, \"file_name\": \"x.png\", \"width\": 1, \"height\": 1}", "", CAT,
           "image 5: file_name x.png is also image 4's");
    expect("{\"id\": \"4\", \"file_name\": \"x.png\", \"width\": 1, \"height\": 1}", "", CAT,
           "images[0]: id is missing or not an integer");
    expect("{\"id\": 4, \"width\": 1, \"height\": 1}", "", CAT, "image 4: file_name is missing");
    expect("{\"id\": 4, \"file_name\": \"../x.png\", \"width\": 1, \"height\": 1}", "", CAT,
           "image 4: file_name holds a '..' part");
    expect("{\"id\": 4, \"file_name\": \"/etc/x.png\", \"width\": 1, \"height\": 1}", "", CAT,
           "image 4: file_name is an absolute path");
    expect("{\"id\": 4, \"file_name\": \"x.png\", \"width\": 0, \"height\": 1}", "", CAT,
           "image 4 (x.png): width and height must be integers");
    expect("{\"id\": 4, \"file_name\": \"x.png\", \"width\": 10.5, \"height\": 1}", "", CAT,
           "image 4 (x.png): width and height");
    expect("7", "", CAT, "images[0]: not an object");
    /* annotations */
    expect(IMG, ANN("\"bbox\": [0, 0, 1, 1]") "," ANN("\"bbox\": [0, 0, 1, 1]"), CAT,
           "annotation 9: id listed more than once");
    expect(IMG, "{\"id\": 9, \"image_id\": 5, \"category_id\": 3, \"bbox\": [0, 0, 1, 1]}", CAT,
           "annotation 9: image_id 5 is not an image of this file");
    expect(IMG, "{\"id\": 9, \"image_id\": 4, \"category_id\": 2, \"bbox\": [0, 0, 1, 1]}", CAT,
           "annotation 9: category_id 2 is not a category of this file");
    expect(IMG, ANN("\"bbox\": [0, 0, 0, 5]"), CAT, "annotation 9: bbox [0, 0, 0, 5] is empty");
    expect(IMG, ANN("\"bbox\": [0, 0, 5, -1]"), CAT, "annotation 9: bbox [0, 0, 5, -1] is empty");
    expect(IMG, ANN("\"bbox\": [90, 0, 20, 5]"), CAT,
           "annotation 9: bbox [90, 0, 20, 5] lies outside image 4 (100x50)");
    expect(IMG, ANN("\"bbox\": [-3, 0, 20, 5]"), CAT, "annotation 9: bbox [-3, 0, 20, 5] lies");
    expect(IMG, ANN("\"bbox\": [0, 0, 20]"), CAT, "annotation 9: bbox must be [x, y, width");
    expect(IMG, ANN("\"bbox\": [0, \"0\", 2, 2]"), CAT, "annotation 9: bbox must be");
    expect(IMG, ANN("\"bbox\": [0, 0, 2, 2], \"iscrowd\": 2"), CAT,
           "annotation 9: iscrowd must be 0 or 1");
    expect(IMG, ANN("\"bbox\": [0, 0, 2, 2], \"iscrowd\": true"), CAT, "annotation 9: iscrowd");
    expect(IMG, "{\"image_id\": 4, \"category_id\": 3, \"bbox\": [0, 0, 1, 1]}", CAT,
           "annotations[0]: id is missing or not an integer");
    expect(IMG, "{\"id\": 9, \"image_id\": 4, \"category_id\": \"3\", \"bbox\": [0, 0, 1, 1]}", CAT,
           "annotation 9: category_id is missing or not an integer");
    /* categories */
    expect(IMG, "", CAT ", {\"id\": 3, \"name\": \"dog\"}", "category 3: id listed twice");
    expect(IMG, "", CAT ", {\"id\": 4, \"name\": \"CAT\"}", "category 4: name CAT is also");
    expect(IMG, "", "{\"id\": 3}", "category 3: name is missing");
    expect(IMG, "", "{\"id\": 3, \"name\": \"a\\u0001b\"}", "category 3: name is missing or not");
    expect(IMG, "", "", "no categories");
    /* the file itself */
    hone_data_kitti_problems pr = {0};
    CHECK(parse("{\"images\": [", &f, &pr) == HONE_EPARSE && f == NULL && pr.count == 1);
    CHECK(pr.kept && strstr(pr.msg[0], "ann.json: not valid JSON: "));
    hone_data_kitti_problems_clear(&pr);
    CHECK(parse("[]", &f, &pr) == HONE_EPARSE && pr.kept && strstr(pr.msg[0], "not a JSON object"));
    hone_data_kitti_problems_clear(&pr);
    CHECK(parse("{\"images\": [], \"images\": []}", &f, &pr) == HONE_EPARSE);
    CHECK(pr.kept && strstr(pr.msg[0], "duplicate"));
    hone_data_kitti_problems_clear(&pr);
    CHECK(parse("{\"images\": {}, \"annotations\": []}", &f, &pr) == HONE_EPARSE);
    CHECK(pr.count == 2 && strstr(pr.msg[0], "\"images\" is missing or not an array") &&
          strstr(pr.msg[1], "\"categories\""));
    hone_data_kitti_problems_clear(&pr);
    /* every problem counted, not only the first */
    snprintf(t, sizeof t,
             "{\"images\": [" IMG "], \"annotations\": [%s, %s, %s], \"categories\": [" CAT "]}",
             "{\"id\": 1, \"image_id\": 4, \"category_id\": 3, \"bbox\": [0, 0, 0, 1]}",
             "{\"id\": 2, \"image_id\": 8, \"category_id\": 3, \"bbox\": [0, 0, 1, 1]}",
             "{\"id\": 3, \"image_id\": 4, \"category_id\": 5, \"bbox\": [0, 0, 1, 1]}");
    CHECK(parse(t, &f, &pr) == HONE_EPARSE && pr.count == 3);
    CHECK(pr.kept == 3 && strstr(pr.msg[0], "annotation 1: ") &&
          strstr(pr.msg[1], "annotation 2: ") && strstr(pr.msg[2], "annotation 3: "));
    hone_data_kitti_problems_clear(&pr);
    /* a flood of small containers is refused before jansson allocates them */
    size_t n = (size_t)64 << 20;
    char *big = malloc(n + 64);
    REQUIRE(big);
    strcpy(big, "{\"images\": [");
    for (size_t i = strlen(big); i < n; i += 3)
        memcpy(big + i, "{},", 3);
    CHECK(hone_data_coco_parse((const uint8_t *)big, n, "big.json", &f, &pr) == HONE_EPARSE);
    CHECK(pr.kept && strstr(pr.msg[0], "big.json: "));
    hone_data_kitti_problems_clear(&pr);
    free(big);
}

/* ---------------------------------------------------------------- folders */

static void mkdirs(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    for (char *s = p + strlen(base) + 1; (s = strchr(s, '/')); s++) {
        *s = 0;
        mkdir(p, 0755);
        *s = '/';
    }
    mkdir(p, 0755);
}

static void write_png(const char *rel, int w, int h)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    uint8_t *px = calloc((size_t)w * h * 3, 1);
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    struct spng_ihdr ih = {(uint32_t)w, (uint32_t)h, 8, SPNG_COLOR_TYPE_TRUECOLOR, 0, 0, 0};
    int e;
    spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    spng_set_ihdr(ctx, &ih);
    spng_encode_image(ctx, px, (size_t)w * h * 3, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    size_t len;
    void *buf = spng_get_png_buffer(ctx, &len, &e);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    free(px);
    spng_ctx_free(ctx);
}

static void write_text(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static const char *const JSON_AB =
    "{\"images\": [{\"id\": 1, \"file_name\": \"a.png\", \"width\": 40, \"height\": 20}, "
    "{\"id\": 2, \"file_name\": \"b.png\", \"width\": 40, \"height\": 20}], \"annotations\": "
    "[{\"id\": 10, \"image_id\": 1, \"category_id\": 5, \"bbox\": [4, 2, 10, 10]}, {\"id\": 11, "
    "\"image_id\": 2, \"category_id\": 2, \"bbox\": [0, 0, 40, 20], \"iscrowd\": 1}], "
    "\"categories\": [{\"id\": 5, \"name\": \"zebra\"}, {\"id\": 2, \"name\": \"apple\"}]}";

static void test_folder_flat(void)
{
    mkdirs("flat/images");
    write_png("flat/images/a.png", 40, 20);
    write_png("flat/images/b.png", 40, 20);
    write_png("flat/images/unlisted.png", 8, 8); /* not in the JSON: ignored */
    write_text("flat/annotations.json", JSON_AB);
    char root[256], err[2048];
    snprintf(root, sizeof root, "%s/flat", base);
    hone_data_kitti *k;
    REQUIRE(hone_data_coco_open(root, NULL, &k, err, sizeof err) == HONE_OK);
    hone_data_kitti_stats st;
    hone_data_kitti_get_stats(k, &st);
    CHECK(st.images == 2 && st.split_images[0] == 2 && st.classes == 2 && st.boxes == 2);
    CHECK(st.dontcare == 1 && st.split_layout == 0 && st.png == 2);
    CHECK(!strcmp(hone_data_kitti_class_name(k, 0), "apple")); /* id 2 before id 5 */
    CHECK(hone_data_kitti_category_id(k, 0) == 2 && hone_data_kitti_category_id(k, 1) == 5);
    CHECK(hone_data_kitti_class_boxes(k, 1) == 1 && hone_data_kitti_class_boxes(k, 0) == 0);
    const hone_data_box *b;
    size_t nb;
    int sp, w, h;
    const char *p = hone_data_kitti_image(k, 0, &sp, &w, &h, &b, &nb);
    CHECK(p && strstr(p, "images/a.png") && w == 40 && h == 20 && nb == 1 && b[0].cls == 1);
    CHECK(b[0].x1 == 4 && b[0].y1 == 2 && b[0].x2 == 14 && b[0].y2 == 12);
    /* packed at 20x10: boxes halved, the crowd region kept as an ignore region of its class
     * (apple), each image's own size kept for COCO's areas */
    char pack[300];
    snprintf(pack, sizeof pack, "%s/flat.pack", base);
    hone_data_pack_opts o = {.width = 20, .height = 10, .channels = 3, .threads = 1};
    REQUIRE(hone_data_kitti_pack(k, pack, &o, err, sizeof err) == HONE_OK);
    hone_data_kitti_free(k);
    hone_data_pack *pk;
    REQUIRE(hone_data_pack_open(pack, 0, &pk, err, sizeof err) == HONE_OK);
    b = hone_data_pack_boxes(pk, 0, &nb);
    CHECK(nb == 1 && b[0].cls == 1 && b[0].x1 == 2 && b[0].x2 == 7 && b[0].y2 == 6);
    b = hone_data_pack_boxes(pk, 1, &nb);
    CHECK(nb == 1 && b[0].cls == HONE_DATA_CROWD(0) && b[0].x2 == 20);
    hone_data_pack_info in;
    hone_data_pack_get_info(pk, &in);
    CHECK(in.has_boxes && in.has_sizes);
    hone_data_pack_source_size(pk, 1, &w, &h);
    CHECK(w == 40 && h == 20);
    const int64_t *ids = hone_data_pack_category_ids(pk); /* class i's COCO id */
    CHECK(in.has_category_ids && ids && ids[0] == 2 && ids[1] == 5);
    CHECK(!strcmp(hone_data_pack_class_name(pk, 1), "zebra"));
    hone_data_pack_free(pk);
    unlink(pack);
}

static void expect_open(const char *rel, const char *want1, const char *want2)
{
    char root[256], err[2048];
    snprintf(root, sizeof root, "%s/%s", base, rel);
    hone_data_kitti *k = (hone_data_kitti *)1;
    int rc = hone_data_coco_open(root, NULL, &k, err, sizeof err);
    if (rc != HONE_EPARSE || k != NULL || !strstr(err, want1) || (want2 && !strstr(err, want2))) {
        fprintf(stderr, "%s: want '%s' and '%s', got %d '%s'\n", rel, want1, want2 ? want2 : "", rc,
                err);
        failures++;
    }
}

static void test_folder_instances(void)
{
    mkdirs("inst/annotations");
    mkdirs("inst/train2017");
    mkdirs("inst/val2017");
    write_png("inst/train2017/a.png", 40, 20);
    write_png("inst/train2017/b.png", 40, 20);
    write_png("inst/val2017/c.png", 40, 20);
    write_text("inst/annotations/instances_train2017.json", JSON_AB);
    write_text("inst/annotations/instances_val2017.json",
               "{\"images\": [{\"id\": 1, \"file_name\": \"c.png\", \"width\": 40, \"height\": "
               "20}], \"annotations\": [], \"categories\": [{\"id\": 5, \"name\": \"zebra\"}, "
               "{\"id\": 2, \"name\": \"apple\"}]}");
    char root[256], err[2048];
    snprintf(root, sizeof root, "%s/inst", base);
    hone_data_kitti *k;
    REQUIRE(hone_data_coco_open(root, NULL, &k, err, sizeof err) == HONE_OK);
    hone_data_kitti_stats st;
    hone_data_kitti_get_stats(k, &st);
    CHECK(st.images == 3 && st.split_images[0] == 2 && st.split_images[1] == 1);
    CHECK(st.split_layout == 1);
    int sp;
    CHECK(strstr(hone_data_kitti_image(k, 2, &sp, NULL, NULL, NULL, NULL), "val2017/c.png") &&
          sp == HONE_DATA_VAL);
    hone_data_kitti_free(k);
    /* the val file's categories differ: named with both files */
    write_text("inst/annotations/instances_val2017.json",
               "{\"images\": [], \"annotations\": [], \"categories\": [{\"id\": 5, \"name\": "
               "\"zebra\"}]}");
    expect_open("inst",
                "annotations/instances_val2017.json: its categories differ from "
                "annotations/instances_train2017.json's",
                NULL);
    /* two files for one split */
    write_text("inst/annotations/instances_val2017.json",
               "{\"images\": [], \"annotations\": [], \"categories\": [{\"id\": 5, \"name\": "
               "\"zebra\"}, {\"id\": 2, \"name\": \"apple\"}]}");
    write_text("inst/annotations/instances_val2014.json", "{}");
    expect_open("inst", "a second file for the val split", NULL);
}

static void test_folder_defects(void)
{
    /* an image listed but missing, one whose size the JSON misstates, a box error: all named */
    mkdirs("bad/images");
    write_png("bad/images/a.png", 40, 30);
    write_text("bad/annotations.json", JSON_AB);
    expect_open("bad", "annotations.json: image 1 (a.png): the JSON says 40x20, the file is 40x30",
                "annotations.json: image 2: images/b.png: ");
    /* not a COCO folder at all */
    mkdirs("none/images");
    expect_open("none", "not a COCO dataset", NULL);
    /* a JSON file that is a link out of the folder is not read */
    mkdirs("link/images");
    char target[300], l[300];
    snprintf(target, sizeof target, "%s/flat/annotations.json", base);
    snprintf(l, sizeof l, "%s/link/annotations.json", base);
    REQUIRE(symlink(target, l) == 0);
    expect_open("link", "annotations.json: a symbolic link out of the dataset's folder", NULL);
}

int main(void)
{
    snprintf(base, sizeof base, "/tmp/hone-coco-XXXXXX");
    REQUIRE(mkdtemp(base));
    test_parse_good();
    test_parse_defects();
    test_folder_flat();
    test_folder_instances();
    test_folder_defects();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
