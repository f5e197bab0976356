/*
 * ocgw_decide.c -- the reference gateway's decision model for ABI 1.2's
 * decide: a scripted list of answers from its config (ocgw.h), so a
 * plugin's judge can be run and checked without any model.
 */
#include "ocgw.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ocgw_decider {
    pthread_mutex_t mu;
    json_t *answers; /* array, borrowed from nothing: a deep copy */
    size_t next;
};

static int bad(char *err, size_t err_len, size_t i, const char *rule)
{
    snprintf(err, err_len, "decisions.answers[%zu]: %s", i, rule);
    return -1;
}

static int check_answer(const json_t *a, size_t i, char *err, size_t err_len)
{
    if (!json_is_object(a))
        return bad(err, err_len, i, "must be an object {label, probability} or {fail}");
    const json_t *d = json_object_get(a, "delayMs");
    if (d && (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 60000))
        return bad(err, err_len, i, "\"delayMs\" must be an integer 0..60000");
    const char *fail = json_string_value(json_object_get(a, "fail"));
    if (json_object_get(a, "fail"))
        return fail && (!strcmp(fail, "io") || !strcmp(fail, "unsupported"))
                   ? 0
                   : bad(err, err_len, i, "\"fail\" must be \"io\" or \"unsupported\"");
    const json_t *p = json_object_get(a, "probability");
    if (!json_is_string(json_object_get(a, "label")))
        return bad(err, err_len, i,
                   "\"label\" must be a string (a label, \"$first\", \"$nobody\")");
    if (!json_is_number(p) || json_number_value(p) < 0 || json_number_value(p) > 1)
        return bad(err, err_len, i, "\"probability\" must be a number in 0..1");
    return 0;
}

int ocgw_decider_new(const json_t *root, struct ocgw_decider **out, char *err, size_t err_len)
{
    *out = NULL;
    const json_t *d = json_object_get(root, "decisions");
    if (!d)
        return 0;
    const json_t *list = json_object_get(d, "answers");
    if (!json_is_object(d) || json_object_size(d) != 1 || !json_is_array(list)) {
        snprintf(err, err_len,
                 "decisions: must be {\"answers\": [...]} (the scripted decision "
                 "model of ABI 1.2 decide)");
        return -1;
    }
    for (size_t i = 0; i < json_array_size(list); i++)
        if (check_answer(json_array_get(list, i), i, err, err_len))
            return -1;
    struct ocgw_decider *dd = calloc(1, sizeof *dd);
    if (!dd || !(dd->answers = json_deep_copy(list))) {
        free(dd);
        snprintf(err, err_len, "decisions: out of memory");
        return -1;
    }
    pthread_mutex_init(&dd->mu, NULL);
    *out = dd;
    return 0;
}

void ocgw_decider_free(struct ocgw_decider *d)
{
    if (!d)
        return;
    json_decref(d->answers);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

/* The label script names for request: itself, or the first / "nobody". */
static const char *pick(const char *want, const json_t *labels)
{
    const char *first = json_string_value(json_array_get(labels, 0));
    if (!strcmp(want, "$first"))
        return first;
    if (!strcmp(want, "$nobody")) {
        for (size_t i = 0; i < json_array_size(labels); i++)
            if (!strcmp(json_string_value(json_array_get(labels, i)), "nobody"))
                return "nobody";
        return first;
    }
    return want;
}

int ocgw_decide(void *user, const json_t *request, json_t **answer)
{
    struct ocgw_decider *d = user;
    pthread_mutex_lock(&d->mu);
    json_t *a = json_array_get(d->answers, d->next);
    if (a) {
        d->next++;
        json_incref(a);
    }
    pthread_mutex_unlock(&d->mu);
    if (!a)
        return OC_ERR_IO; /* the script is used up */
    long delay = (long)json_integer_value(json_object_get(a, "delayMs"));
    long limit = (long)json_integer_value(json_object_get(request, "timeoutMs"));
    struct timespec ts = {(delay < limit ? delay : limit) / 1000,
                          ((delay < limit ? delay : limit) % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int rc = OC_OK;
    const char *fail = json_string_value(json_object_get(a, "fail"));
    if (fail)
        rc = !strcmp(fail, "unsupported") ? OC_ERR_UNSUPPORTED : OC_ERR_IO;
    else if (delay >= limit)
        rc = OC_ERR_IO; /* later than the caller waits: a timeout */
    else
        *answer = json_pack("{s:s, s:f, s:s, s:i, s:i}", "label",
                            pick(json_string_value(json_object_get(a, "label")),
                                 json_object_get(request, "labels")),
                            "probability", json_number_value(json_object_get(a, "probability")),
                            "source", "ocgw-script", "tokensIn", 0, "tokensOut", 0);
    json_decref(a);
    return rc != OC_OK ? rc : *answer ? OC_OK : OC_ERR_IO;
}
