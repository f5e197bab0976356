/*
 * ctl_serve_html.c -- the status page (ctl_serve.h): drawn here from a
 * snapshot, every stored text escaped, then redrawn every 2 s by the
 * inline script from /api/status (with DOM text nodes, never as markup).
 * The budget column shows each scope's "budget" text (its breaker, what
 * it ran today, the limits), the cost paragraph the ledger's totals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_serve.h"

int dg_html_escape(dg_buf *b, const char *s)
{
    if (!s)
        return 0;
    int fail = 0;
    const char *run = s;
    for (; *s; s++) {
        const char *rep = *s == '&'    ? "&amp;"
                          : *s == '<'  ? "&lt;"
                          : *s == '>'  ? "&gt;"
                          : *s == '"'  ? "&quot;"
                          : *s == '\'' ? "&#39;"
                                       : NULL;
        if (!rep)
            continue;
        fail |= dg_buf_add(b, run, (size_t)(s - run));
        fail |= dg_buf_adds(b, rep);
        run = s + 1;
    }
    fail |= dg_buf_add(b, run, (size_t)(s - run));
    return fail ? -1 : 0;
}

static const char STYLE[] =
    "body{font-family:sans-serif;margin:1em 2em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:13px}"
    "th{background:#f0f0f0}.muted{color:#777}.err{color:#a00}"
    "ol.timeline{font-size:13px}h3{margin-bottom:.2em}";

/* The page's own script: redraws #main from /api/status every 2 s. */
static const char SCRIPT[] =
    "(function(){\n"
    "var q=new URLSearchParams(location.search).get('token');\n"
    "var tq=q?'token='+encodeURIComponent(q):'';\n"
    "function el(t,cls,kids){var e=document.createElement(t);if(cls)e.className=cls;\n"
    " (kids||[]).forEach(function(k){e.appendChild(typeof k==='string'?"
    "document.createTextNode(k):k);});return e;}\n"
    "function txt(v){if(v===null||v===undefined||v==='')return '-';"
    "if(Array.isArray(v))return v.length?v.join(', '):'-';return String(v);}\n"
    "function table(head,rows){return el('table',null,[el('tr',null,head.map(function(h){"
    "return el('th',null,[h]);}))].concat(rows.map(function(r){return el('tr',null,"
    "r.map(function(c){return el('td',null,[txt(c)]);}));})));}\n"
    "function render(s){var f=document.createDocumentFragment();\n"
    " if(!s.ok){f.appendChild(el('p','err',['The store cannot be read: '+txt(s.error)]));"
    "return f;}\n"
    " f.appendChild(el('p','muted',['store '+s.store+', schema '+s.schemaVersion]));\n"
    " f.appendChild(el('h2',null,['Scopes']));\n"
    " if(!s.scopes.length)f.appendChild(el('p','muted',['no managed scope yet']));\n"
    " else f.appendChild(table(['Channel','Scope','State','Order','Speaker','Passed',"
    "'Agent msgs','Last change','Budget'],s.scopes.map(function(x){return [x.channelId,"
    "x.scope,x.state,x.order,x.speaker,x.passed,x.agentMessages,x.lastChange,"
    "x.budget.text];})));\n"
    " f.appendChild(el('p','muted',['budget: '+s.budget.text]));\n"
    " f.appendChild(el('h2',null,['Cost']));\n"
    " f.appendChild(el('p','cost',['today (UTC): '+s.cost.today.summary]));\n"
    " f.appendChild(el('p','cost',['every run kept'+(s.cost.kept.firstRun?' (since '+"
    "s.cost.kept.firstRun+')':'')+': '+s.cost.kept.summary]));\n"
    " f.appendChild(el('h2',null,['Discussions']));\n"
    " if(!s.discussions.length)f.appendChild(el('p','muted',['no discussion yet']));\n"
    " s.discussions.forEach(function(d){var sec=el('section','discussion');\n"
    "  sec.appendChild(el('h3',null,['#'+txt(d.name)+' (discussion '+d.discussionId+', '+"
    "d.status+')']));\n"
    "  sec.appendChild(el('p',null,['channel '+d.channelId+', from '+d.originChannelId+"
    "', initiator '+d.initiator+', participants '+txt(d.participants)+', turn '+d.turn+"
    "', speaker '+txt(d.speaker)+', summary '+txt(d.summaryPath)]));\n"
    "  sec.appendChild(el('ol','timeline',d.timeline.map(function(t){return el('li',null,"
    "[txt(t.at)+' '+t.what+(t.state?' ('+txt(t.speakerBefore)+' -> '+txt(t.speakerAfter)+"
    "', '+t.state+')':'')]);})));\n"
    "  f.appendChild(sec);});\n"
    " if(s.moreDiscussions)f.appendChild(el('p','muted',['(only the newest are shown)']));\n"
    " var o=s.outbox;f.appendChild(el('h2',null,['Outbox']));\n"
    " f.appendChild(el('p',null,['pending '+o.pending+', sent '+o.sent+', failed '+o.failed+"
    "(o.oldestPendingAgeSec===null?'':', oldest pending '+o.oldestPendingAgeSec+' s old')]));\n"
    " if(o.pendingRows.length)f.appendChild(table(['Pending','Channel','Attempts','Created'],"
    "o.pendingRows.map(function(r){return [r.id,r.channelId,r.attempts,r.createdAt];})));\n"
    " if(o.failedRows.length)f.appendChild(table(['Failed','Channel','Attempts','Failed at',"
    "'Reason'],o.failedRows.map(function(r){return [r.id,r.channelId,r.attempts,r.failedAt,"
    "r.reason];})));\n"
    " return f;}\n"
    "var n=0;\n"
    "function tick(){fetch('api/status'+(tq?'?'+tq:''),{cache:'no-store'})"
    ".then(function(r){return r.json();}).then(function(s){\n"
    " document.getElementById('main').replaceChildren(render(s));\n"
    " document.getElementById('chart').src='chart.svg?'+(tq?tq+'&':'')+'n='+(++n);\n"
    " document.getElementById('live').textContent='updated '+txt(s.generatedAt)+"
    "', every 2 s';\n"
    " document.body.setAttribute('data-refreshes',String(n));})\n"
    ".catch(function(e){document.getElementById('live').textContent="
    "'not refreshed: '+e.message;console.error('status page: not refreshed: '+e.message);})\n"
    ".finally(function(){setTimeout(tick,2000);});}\n"
    "setTimeout(tick,2000);\n"
    "})();\n";

typedef struct page {
    dg_buf b;
    int fail;
} page;

static void raw(page *p, const char *s)
{
    p->fail |= dg_buf_adds(&p->b, s);
}

static void esc(page *p, const char *s)
{
    p->fail |= dg_html_escape(&p->b, s);
}

/* A JSON value as the script's txt() shows it: "-" for null or empty,
 * arrays joined by ", ". */
static void val(page *p, const json_t *v)
{
    char num[32];
    if (json_is_string(v) && *json_string_value(v)) {
        esc(p, json_string_value(v));
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        raw(p, num);
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (i)
                raw(p, ", ");
            val(p, e);
        }
    } else {
        raw(p, "-");
    }
}

static void field(page *p, const char *before, const json_t *o, const char *key)
{
    raw(p, before);
    val(p, json_object_get(o, key));
}

static void cell(page *p, const json_t *o, const char *key)
{
    raw(p, "<td>");
    val(p, json_object_get(o, key));
    raw(p, "</td>");
}

static void head(page *p, const char *const *names)
{
    raw(p, "<table><tr>");
    for (; *names; names++) {
        raw(p, "<th>");
        raw(p, *names);
        raw(p, "</th>");
    }
    raw(p, "</tr>");
}

static void scopes(page *p, const json_t *snap)
{
    static const char *const cols[] = {"Channel", "Scope",      "State",       "Order",  "Speaker",
                                       "Passed",  "Agent msgs", "Last change", "Budget", NULL};
    const json_t *v = json_object_get(snap, "scopes");
    raw(p, "<h2>Scopes</h2>");
    if (!json_array_size(v)) {
        raw(p, "<p class=\"muted\">no managed scope yet</p>");
    } else {
        head(p, cols);
        size_t i;
        json_t *o;
        json_array_foreach(v, i, o) {
            raw(p, "<tr>");
            static const char *const keys[] = {"channelId",     "scope",     "state",
                                               "order",         "speaker",   "passed",
                                               "agentMessages", "lastChange"};
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
                cell(p, o, keys[k]);
            cell(p, json_object_get(o, "budget"), "text");
            raw(p, "</tr>");
        }
        raw(p, "</table>");
    }
    raw(p, "<p class=\"muted\">budget: ");
    esc(p, json_string_value(json_object_get(json_object_get(snap, "budget"), "text")));
    raw(p, "</p>");
}

static void cost(page *p, const json_t *snap)
{
    const json_t *c = json_object_get(snap, "cost");
    const json_t *kept = json_object_get(c, "kept");
    raw(p, "<h2>Cost</h2>");
    field(p, "<p class=\"cost\">today (UTC): ", json_object_get(c, "today"), "summary");
    raw(p, "</p><p class=\"cost\">every run kept");
    if (json_is_string(json_object_get(kept, "firstRun"))) {
        field(p, " (since ", kept, "firstRun");
        raw(p, ")");
    }
    field(p, ": ", kept, "summary");
    raw(p, "</p>");
}

static void discussions(page *p, const json_t *snap)
{
    const json_t *v = json_object_get(snap, "discussions");
    raw(p, "<h2>Discussions</h2>");
    if (!json_array_size(v))
        raw(p, "<p class=\"muted\">no discussion yet</p>");
    size_t i;
    json_t *d;
    json_array_foreach(v, i, d) {
        raw(p, "<section class=\"discussion\"><h3>#");
        val(p, json_object_get(d, "name"));
        field(p, " (discussion ", d, "discussionId");
        field(p, ", ", d, "status");
        raw(p, ")</h3><p>");
        field(p, "channel ", d, "channelId");
        field(p, ", from ", d, "originChannelId");
        field(p, ", initiator ", d, "initiator");
        field(p, ", participants ", d, "participants");
        field(p, ", turn ", d, "turn");
        field(p, ", speaker ", d, "speaker");
        field(p, ", summary ", d, "summaryPath");
        raw(p, "</p><ol class=\"timeline\">");
        size_t k;
        json_t *t;
        json_array_foreach(json_object_get(d, "timeline"), k, t) {
            raw(p, "<li>");
            field(p, "", t, "at");
            field(p, " ", t, "what");
            if (json_object_get(t, "state")) {
                field(p, " (", t, "speakerBefore");
                field(p, " -&gt; ", t, "speakerAfter");
                field(p, ", ", t, "state");
                raw(p, ")");
            }
            raw(p, "</li>");
        }
        raw(p, "</ol></section>");
    }
    if (json_is_true(json_object_get(snap, "moreDiscussions")))
        raw(p, "<p class=\"muted\">(only the newest are shown)</p>");
}

static void outbox(page *p, const json_t *snap)
{
    const json_t *o = json_object_get(snap, "outbox");
    raw(p, "<h2>Outbox</h2><p>");
    field(p, "pending ", o, "pending");
    field(p, ", sent ", o, "sent");
    field(p, ", failed ", o, "failed");
    if (json_is_integer(json_object_get(o, "oldestPendingAgeSec"))) {
        field(p, ", oldest pending ", o, "oldestPendingAgeSec");
        raw(p, " s old");
    }
    raw(p, "</p>");
    static const char *const pc[] = {"Pending", "Channel", "Attempts", "Created", NULL};
    static const char *const fc[] = {"Failed", "Channel", "Attempts", "Failed at", "Reason", NULL};
    static const char *const pk[] = {"id", "channelId", "attempts", "createdAt", NULL};
    static const char *const fk[] = {"id", "channelId", "attempts", "failedAt", "reason", NULL};
    const char *const *cols[] = {pc, fc}, *const * keys[] = {pk, fk};
    const char *rows[] = {"pendingRows", "failedRows"};
    for (int w = 0; w < 2; w++) {
        const json_t *v = json_object_get(o, rows[w]);
        if (!json_array_size(v))
            continue;
        head(p, cols[w]);
        size_t i;
        json_t *r;
        json_array_foreach(v, i, r) {
            raw(p, "<tr>");
            for (const char *const *k = keys[w]; *k; k++)
                cell(p, r, *k);
            raw(p, "</tr>");
        }
        raw(p, "</table>");
    }
}

char *dg_serve_page(const json_t *snap, const char *token)
{
    page p = {0};
    raw(&p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>Dirigent status</title><link rel=\"icon\" href=\"data:,\"><style>");
    raw(&p, STYLE);
    raw(&p, "</style></head>\n<body><h1>Dirigent status</h1>"
            "<p id=\"live\" class=\"muted\">");
    field(&p, "as of ", snap, "generatedAt");
    raw(&p, ", every 2 s</p>\n<h2>Runs per hour</h2><p class=\"muted\">Agent runs per hour "
            "(UTC) as the cost ledger recorded the turn manager's verdict: made, the run went "
            "to the agent's own model; avoided, it was claimed (no model call) or swapped to "
            "the no-reply model.</p><img id=\"chart\" alt=\"runs per hour, made and avoided\" "
            "width=\"720\" height=\"240\" src=\"chart.svg");
    if (token && *token) {
        raw(&p, "?token=");
        for (const char *t = token; *t; t++) { /* the query value, percent-encoded */
            char enc[4];
            unsigned char c = (unsigned char)*t;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.' || c == '~')
                snprintf(enc, sizeof enc, "%c", c);
            else
                snprintf(enc, sizeof enc, "%%%02X", c);
            raw(&p, enc);
        }
    }
    raw(&p, "\">\n<div id=\"main\">");
    if (!json_is_true(json_object_get(snap, "ok"))) {
        raw(&p, "<p class=\"err\">The store cannot be read: ");
        val(&p, json_object_get(snap, "error"));
        raw(&p, "</p>");
    } else {
        field(&p, "<p class=\"muted\">store ", snap, "store");
        field(&p, ", schema ", snap, "schemaVersion");
        raw(&p, "</p>");
        scopes(&p, snap);
        cost(&p, snap);
        discussions(&p, snap);
        outbox(&p, snap);
    }
    raw(&p, "</div>\n<script>\n");
    raw(&p, SCRIPT);
    raw(&p, "</script></body></html>\n");
    if (p.fail) {
        dg_buf_free(&p.b);
        return NULL;
    }
    return p.b.s;
}
