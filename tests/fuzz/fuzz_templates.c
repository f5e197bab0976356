/*
 * fuzz_templates.c -- libFuzzer target: template checking and rendering
 * (plugin/templates.c), through the real loader.
 *
 * Input: byte 0 picks a built-in template name; the rest, split at NUL
 * bytes, is the template text and then up to 8 placeholder values (in the
 * order of dg_tpl_vars). The text goes into a private templatesDir under
 * that name and is loaded as an override. Checked: the loader and
 * dg_templates_check_text agree; a loaded template renders; a value is
 * copied verbatim, never expanded (rendering with every value "{status}"
 * yields no new placeholder text beyond what the values carry).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "openclaw/plugin.h"
#include "templates.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *p = hay; (p = strstr(p, needle)); p += l)
        n++;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n_names = 0;
    while (dg_embedded_templates[n_names].name)
        n_names++;
    const char *name = dg_embedded_templates[data[0] % n_names].name;
    char *parts[9];
    size_t n = fz_split(data + 1, size - 1, parts, 9);
    const char *text = parts[0] ? parts[0] : "";
    char err1[512] = "", err2[512] = "";
    int direct = dg_templates_check_text(name, text, err1, sizeof err1);

    char *dir = fz_mkdtemp("tpl");
    if (fz_write(dir, name, text, strlen(text))) {
        fprintf(stderr, "fuzz_templates: cannot write the template\n");
        abort();
    }
    dg_templates *t = NULL;
    int rc = dg_templates_load(dir, &t, err2, sizeof err2);
    if (direct != OC_OK && rc == OC_OK) {
        fprintf(stderr, "fuzz_templates: loader accepted what check_text refused (%s)\n", err1);
        abort();
    }
    if (rc != OC_OK && !err2[0]) {
        fprintf(stderr, "fuzz_templates: a refusal without a reason\n");
        abort();
    }
    if (rc == OC_OK) {
        dg_tpl_vars v = {.discussGuide = parts[1],
                         .initiatorMention = parts[2],
                         .participantMentions = parts[3],
                         .summaryPath = parts[4],
                         .discussionChannel = parts[5],
                         .originChannel = parts[6],
                         .status = parts[7],
                         .maxAgentMessages = parts[8]};
        char *out = dg_templates_render(t, name, &v);
        if (!out) {
            fprintf(stderr, "fuzz_templates: a loaded template did not render\n");
            abort();
        }
        free(out);
        const char *all = "{status}";
        /* Every field is a const char * (templates.h): all of them set. */
        dg_tpl_vars same;
        const char **field = (const char **)&same;
        for (size_t i = 0; i < sizeof same / sizeof *field; i++)
            field[i] = all;
        char *o2 = dg_templates_render(t, name, &same);
        const char *raw = dg_templates_get(t, name);
        /* Each placeholder becomes "{status}" once; never expanded again. */
        if (!o2 || !raw || count(o2, "{status}") < count(raw, "{status}")) {
            fprintf(stderr, "fuzz_templates: render lost or re-expanded a value\n");
            abort();
        }
        free(o2);
    }
    dg_templates_free(t);
    fz_rmtree(dir);
    free(dir);
    fz_free_parts(parts, n);
    return 0;
}
