/*
 * ctl_serve_svg.c -- the status page's chart (ctl_serve.h): runs per hour,
 * made (a model ran) and avoided (claimed or swapped before the model), as
 * stacked bars in a plain SVG document drawn here (no scripts, no fonts or
 * styles from elsewhere).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_serve.h"

#define W 720
#define H 240
#define LEFT 44
#define RIGHT 12
#define TOP 28
#define BOTTOM 36

/* The smallest of 1, 2, 5, 10, 20, 50... at or above v (the axis top). */
static long nice_top(long v)
{
    long step = 1;
    for (;;) {
        if (v <= step)
            return step;
        if (v <= 2 * step)
            return 2 * step;
        if (v <= 5 * step)
            return 5 * step;
        step *= 10;
    }
}

char *dg_serve_chart_svg(const dg_serve_hour *h, size_t n)
{
    dg_buf b = {0};
    char line[512];
    long max = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i].made + h[i].avoided > max)
            max = h[i].made + h[i].avoided;
    long top = nice_top(max);
    int plot_w = W - LEFT - RIGHT, plot_h = H - TOP - BOTTOM;
    double slot = n ? (double)plot_w / (double)n : plot_w;
    int fail = 0;
#define OUT(...) (snprintf(line, sizeof line, __VA_ARGS__), fail |= dg_buf_adds(&b, line))
    OUT("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
        "%d\" role=\"img\" aria-label=\"runs per hour, made and avoided\" "
        "font-family=\"sans-serif\" font-size=\"11\">\n",
        W, H, W, H);
    OUT("<title>Runs per hour (UTC): model calls made and avoided</title>\n");
    OUT("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    /* Legend. */
    OUT("<rect x=\"%d\" y=\"8\" width=\"10\" height=\"10\" fill=\"#c0392b\"/>"
        "<text x=\"%d\" y=\"17\">made (a model ran)</text>\n",
        LEFT, LEFT + 14);
    OUT("<rect x=\"%d\" y=\"8\" width=\"10\" height=\"10\" fill=\"#27ae60\"/>"
        "<text x=\"%d\" y=\"17\">avoided (claimed or swapped)</text>\n",
        LEFT + 150, LEFT + 164);
    /* Axes and the scale: 0 and the top. */
    OUT("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", LEFT, TOP, LEFT,
        TOP + plot_h);
    OUT("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", LEFT, TOP + plot_h,
        W - RIGHT, TOP + plot_h);
    OUT("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", LEFT, TOP, W - RIGHT,
        TOP);
    OUT("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%ld</text>\n", LEFT - 4, TOP + 4, top);
    OUT("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", LEFT - 4, TOP + plot_h + 4);
    for (size_t i = 0; i < n; i++) {
        double x = LEFT + slot * (double)i + slot * 0.15, bw = slot * 0.7;
        double hm = (double)plot_h * (double)h[i].made / (double)top;
        double ha = (double)plot_h * (double)h[i].avoided / (double)top;
        double base = TOP + plot_h;
        if (h[i].made)
            OUT("<rect class=\"made\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"#c0392b\"><title>%02lld:00 UTC: %ld made</title></rect>\n",
                x, base - hm, bw, hm, (long long)(h[i].hour % 24), h[i].made);
        if (h[i].avoided)
            OUT("<rect class=\"avoided\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"#27ae60\"><title>%02lld:00 UTC: %ld avoided</title></rect>\n",
                x, base - hm - ha, bw, ha, (long long)(h[i].hour % 24), h[i].avoided);
        if (i % 3 == 0 || i + 1 == n)
            OUT("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%02lld</text>\n", x + bw / 2,
                TOP + plot_h + 14, (long long)(h[i].hour % 24));
    }
    OUT("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">hour (UTC), the last %zu</text>\n",
        LEFT + plot_w / 2, H - 6, n);
    OUT("</svg>\n");
#undef OUT
    if (fail) {
        dg_buf_free(&b);
        return NULL;
    }
    return b.s;
}
