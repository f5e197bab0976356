/*
 * och_decide.c -- ABI 1.2's decide in the host core: the request a plugin
 * sends is checked as the ABI states it, handed to the host's decision
 * model (och_host_set_decide), and its answer checked before the plugin
 * sees it.
 */
#include "och_internal.h"

#include <string.h>

void och_host_set_decide(och_host *h, och_decide_fn fn, void *user)
{
    h->decide_fn = fn;
    h->decide_user = user;
}

/* 1 when request has the ABI's shape. */
static int request_ok(const json_t *r)
{
    const json_t *labels = json_object_get(r, "labels");
    const json_t *ms = json_object_get(r, "timeoutMs");
    size_t n = json_array_size(labels);
    if (!json_is_object(r) || !json_is_string(json_object_get(r, "question")) ||
        !json_is_string(json_object_get(r, "context")) || !json_is_array(labels) || n < 2 ||
        n > 32 || !json_is_integer(ms) || json_integer_value(ms) < 1 ||
        json_integer_value(ms) > 60000)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(labels, i));
        if (!a)
            return 0;
        for (size_t k = 0; k < i; k++)
            if (strcmp(a, json_string_value(json_array_get(labels, k))) == 0)
                return 0;
    }
    return 1;
}

/* 1 when answer names a label of request with a probability in 0..1. */
static int answer_ok(const json_t *request, const json_t *answer)
{
    const char *label = json_string_value(json_object_get(answer, "label"));
    const json_t *p = json_object_get(answer, "probability");
    if (!label || !json_is_number(p) || json_number_value(p) < 0 || json_number_value(p) > 1)
        return 0;
    const json_t *labels = json_object_get(request, "labels");
    for (size_t i = 0; i < json_array_size(labels); i++)
        if (strcmp(label, json_string_value(json_array_get(labels, i))) == 0)
            return 1;
    return 0;
}

int och_decide(och_host *h, const json_t *request, json_t **answer)
{
    *answer = NULL;
    if (!request_ok(request))
        return OC_ERR_INVALID;
    if (!h->decide_fn)
        return OC_ERR_UNSUPPORTED;
    int rc = h->decide_fn(h->decide_user, request, answer);
    if (rc == OC_OK && !answer_ok(request, *answer)) {
        och_log(h, OC_LOG_WARN, NULL, "decide: the decision model's answer names no label asked");
        rc = OC_ERR_IO;
    }
    if (rc != OC_OK) {
        json_decref(*answer);
        *answer = NULL;
    }
    return rc == OC_OK || rc == OC_ERR_UNSUPPORTED || rc == OC_ERR_INVALID ? rc : OC_ERR_IO;
}
