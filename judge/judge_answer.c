/*
 * judge_answer.c -- a judge's answer read and checked (judge.h), and the
 * chat-completion request that asks for it. Whatever a model or a host
 * sends is untrusted: every field is checked against the labels asked.
 */
#include "judge.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

static int refuse(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *err, size_t err_len, const char *fmt, ...)
{
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return DG_ERR_INVALID;
}

/* An optional count: absent or null -> -1; else a non-negative integer. */
static int read_count(const json_t *o, const char *key, int64_t *out, char *err, size_t err_len)
{
    const json_t *v = json_object_get(o, key);
    *out = -1;
    if (!v || json_is_null(v))
        return DG_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return refuse(err, err_len, "judge answer: \"%s\" must be a non-negative integer", key);
    *out = (int64_t)json_integer_value(v);
    return DG_OK;
}

int dgj_parse_answer(const json_t *o, const char *const *labels, size_t n, dgj_answer *out,
                     char *err, size_t err_len)
{
    if (!json_is_object(o))
        return refuse(err, err_len, "judge answer: must be an object {\"label\", \"probability\"}");
    const char *label = json_string_value(json_object_get(o, "label"));
    if (!label)
        return refuse(err, err_len, "judge answer: \"label\" must be a string");
    size_t i = 0;
    while (i < n && strcmp(labels[i], label) != 0)
        i++;
    if (i == n)
        return refuse(err, err_len, "judge answer: \"label\" \"%.40s\" is none of the labels asked",
                      label);
    const json_t *p = json_object_get(o, "probability");
    double prob = json_number_value(p);
    if (!json_is_number(p) || !isfinite(prob) || prob < 0 || prob > 1)
        return refuse(err, err_len, "judge answer: \"probability\" must be a number in 0..1");
    const json_t *src = json_object_get(o, "source");
    if (src && !json_is_null(src) && !json_is_string(src))
        return refuse(err, err_len, "judge answer: \"source\" must be a string");
    int rc = read_count(o, "tokensIn", &out->tokens_in, err, err_len);
    if (rc == DG_OK)
        rc = read_count(o, "tokensOut", &out->tokens_out, err, err_len);
    if (rc != DG_OK)
        return rc;
    snprintf(out->label, sizeof out->label, "%s", labels[i]);
    out->probability = prob;
    snprintf(out->source, sizeof out->source, "%s",
             json_is_string(src) ? json_string_value(src) : "");
    return DG_OK;
}

/* The answer object inside a model's text: the first '{' to the last '}'
 * (a model may wrap it in prose or a code fence). NEW reference or NULL. */
static json_t *object_in_text(const char *text)
{
    const char *open = strchr(text, '{');
    const char *close = strrchr(text, '}');
    if (!open || !close || close < open)
        return NULL;
    return json_loadb(open, (size_t)(close - open) + 1, JSON_REJECT_DUPLICATES, NULL);
}

int dgj_parse_chat_completion(const char *body, size_t len, const char *const *labels, size_t n,
                              dgj_answer *out, char *err, size_t err_len)
{
    json_error_t je;
    json_t *root = body ? json_loadb(body, len, 0, &je) : NULL;
    if (!root)
        return refuse(err, err_len, "judge: the chat completion is not JSON");
    const json_t *choice = json_array_get(json_object_get(root, "choices"), 0);
    const char *content =
        json_string_value(json_object_get(json_object_get(choice, "message"), "content"));
    json_t *inner = content ? object_in_text(content) : NULL;
    int rc;
    if (!content)
        rc = refuse(err, err_len, "judge: the chat completion has no choices[0].message.content");
    else if (!inner)
        rc = refuse(err, err_len, "judge: the model's message holds no JSON object");
    else
        rc = dgj_parse_answer(inner, labels, n, out, err, err_len);
    if (rc == DG_OK) {
        const json_t *usage = json_object_get(root, "usage");
        json_int_t in = json_integer_value(json_object_get(usage, "prompt_tokens"));
        json_int_t outn = json_integer_value(json_object_get(usage, "completion_tokens"));
        if (out->tokens_in < 0 && in > 0)
            out->tokens_in = in;
        if (out->tokens_out < 0 && outn > 0)
            out->tokens_out = outn;
        const char *model = json_string_value(json_object_get(root, "model"));
        if (!out->source[0])
            snprintf(out->source, sizeof out->source, "openai:%.80s", model ? model : "?");
    }
    json_decref(inner);
    json_decref(root);
    return rc;
}

json_t *dgj_chat_request(const char *model, const char *const *labels, size_t n,
                         const char *context)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        if (json_array_append_new(list, json_string(labels[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    char *labels_text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    if (!labels_text)
        return NULL;
    const char *system =
        "You are the chair of a meeting of AI agents. You never speak yourself; you only say "
        "who speaks next. Answer with one JSON object and nothing else: {\"label\": <one of the "
        "labels>, \"probability\": <your confidence, 0..1>}.";
    size_t ulen = strlen(DGJ_QUESTION) + strlen(labels_text) + strlen(context) + 32;
    char *user = malloc(ulen);
    if (user)
        snprintf(user, ulen, "%s\nLabels: %s\n\n%s", DGJ_QUESTION, labels_text, context);
    free(labels_text);
    json_t *req = user ? json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}], s:f, s:i}", "model", model,
                                   "messages", "role", "system", "content", system, "role", "user",
                                   "content", user, "temperature", 0.0, "max_tokens", 60)
                       : NULL;
    free(user);
    return req;
}
