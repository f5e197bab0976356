/*
 * fake_judge.c -- the fake OpenAI-compatible judge endpoint (fake_judge.h).
 */
#include "fake_judge.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_server.h"

#define FJ_MAX_STEPS 64
#define FJ_MAX_BODY (1u << 20)

struct fake_judge {
    struct MHD_Daemon *mhd;
    char url[64];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fj_step steps[FJ_MAX_STEPS];
    char labels[FJ_MAX_STEPS][64];
    size_t head, n;
    fj_step dflt;
    char dflt_label[64];
    int requests;
    int released, stopping;
    char *last_body, *last_auth;
};

typedef struct fj_req {
    dg_http_body body;
} fj_req;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* The next step (a copy; the label into label). */
static fj_step next_step(fake_judge *f, char label[64])
{
    fj_step s;
    if (f->n) {
        size_t i = f->head % FJ_MAX_STEPS;
        s = f->steps[i];
        memcpy(label, f->labels[i], 64);
        f->head++;
        f->n--;
    } else {
        s = f->dflt;
        memcpy(label, f->dflt_label, 64);
    }
    return s;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *text)
{
    struct MHD_Response *r = text ? dg_http_response(text, strlen(text), "application/json") : NULL;
    return r ? dg_http_queue(c, status, r) : MHD_NO;
}

static char *answer_text(const char *label, double p)
{
    json_t *inner = json_pack("{s:s, s:f}", "label", label, "probability", p);
    char *content = inner ? json_dumps(inner, JSON_COMPACT) : NULL;
    json_decref(inner);
    if (!content)
        return NULL;
    /* A model's prose around the object: the parser must find it. */
    char *wrapped = NULL;
    if (asprintf(&wrapped, "Here is my choice: %s", content) < 0)
        wrapped = NULL;
    free(content);
    json_t *o = wrapped ? json_pack("{s:s, s:s, s:[{s:i, s:{s:s, s:s}}], s:{s:i, s:i}}", "id",
                                    "fake-1", "model", "fake-judge", "choices", "index", 0,
                                    "message", "role", "assistant", "content", wrapped, "usage",
                                    "prompt_tokens", 321, "completion_tokens", 9)
                        : NULL;
    free(wrapped);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static enum MHD_Result answer(fake_judge *f, struct MHD_Connection *c, fj_req *rq)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    char label[64];
    pthread_mutex_lock(&f->mu);
    f->requests++;
    free(f->last_body);
    free(f->last_auth);
    f->last_body = strdup(rq->body.buf.s ? rq->body.buf.s : "");
    f->last_auth = auth ? strdup(auth) : NULL;
    fj_step s = next_step(f, label);
    pthread_cond_broadcast(&f->cv);
    while (s.hold && !f->released && !f->stopping)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    if (s.delay_ms > 0)
        sleep_ms(s.delay_ms);
    if (s.kind == FJ_FAIL)
        return reply(c, (unsigned)(s.status ? s.status : 500),
                     strdup("{\"error\":{\"message\":\"the fake judge fails\"}}"));
    if (s.kind == FJ_GARBAGE)
        return reply(c, 200,
                     strdup("{\"choices\":[{\"message\":{\"content\":\"I think planner "
                            "should go, definitely\"}}]}"));
    return reply(c, 200, answer_text(label, s.probability));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    fake_judge *f = cls;
    fj_req *rq = *con_cls;
    if (!rq) {
        if (!(rq = calloc(1, sizeof *rq)))
            return MHD_NO;
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size)
        return dg_http_body_take(&rq->body, upload_data, upload_data_size, FJ_MAX_BODY) ? MHD_NO
                                                                                        : MHD_YES;
    if (strcmp(method, "POST") != 0 || strcmp(url, "/v1/chat/completions") != 0)
        return reply(c, 404, strdup("{\"error\":{\"message\":\"no such route\"}}"));
    return answer(f, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    fj_req *rq = *con_cls;
    if (rq) {
        dg_http_body_free(&rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

fake_judge *fake_judge_start(void)
{
    fake_judge *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->dflt = (fj_step){.kind = FJ_FAIL, .status = 503};
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                              NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR,
                              (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, f,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!f->mhd) {
        fake_judge_stop(f);
        return NULL;
    }
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u/v1", dg_http_bound_port(f->mhd, 0));
    return f;
}

void fake_judge_stop(fake_judge *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopping = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (f->mhd)
        MHD_stop_daemon(f->mhd);
    free(f->last_body);
    free(f->last_auth);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

const char *fake_judge_url(const fake_judge *f)
{
    return f->url;
}

void fake_judge_push(fake_judge *f, fj_step step)
{
    pthread_mutex_lock(&f->mu);
    if (f->n < FJ_MAX_STEPS) {
        size_t i = (f->head + f->n) % FJ_MAX_STEPS;
        f->steps[i] = step;
        snprintf(f->labels[i], 64, "%s", step.label ? step.label : "");
        f->n++;
    }
    pthread_mutex_unlock(&f->mu);
}

void fake_judge_default(fake_judge *f, fj_step step)
{
    pthread_mutex_lock(&f->mu);
    f->dflt = step;
    snprintf(f->dflt_label, sizeof f->dflt_label, "%s", step.label ? step.label : "");
    pthread_mutex_unlock(&f->mu);
}

void fake_judge_release(fake_judge *f)
{
    pthread_mutex_lock(&f->mu);
    f->released = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int fake_judge_requests(fake_judge *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->requests;
    pthread_mutex_unlock(&f->mu);
    return n;
}

int fake_judge_wait_requests(fake_judge *f, int n, int wait_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    while (f->requests < n && pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0) {
    }
    int ok = f->requests >= n;
    pthread_mutex_unlock(&f->mu);
    return ok;
}

char *fake_judge_last_body(fake_judge *f)
{
    pthread_mutex_lock(&f->mu);
    char *c = f->last_body ? strdup(f->last_body) : NULL;
    pthread_mutex_unlock(&f->mu);
    return c;
}

char *fake_judge_last_auth(fake_judge *f)
{
    pthread_mutex_lock(&f->mu);
    char *c = f->last_auth ? strdup(f->last_auth) : NULL;
    pthread_mutex_unlock(&f->mu);
    return c;
}
