/*
 * fake_judge.h -- a fake OpenAI-compatible chat-completions endpoint on
 * 127.0.0.1 for the judge's tests: POST /v1/chat/completions answers from
 * a script, one step per request (then the default step): an answer
 * {"label", "probability"} in choices[0].message.content with a usage
 * block, an HTTP failure, a hang (the answer comes after delay_ms, past
 * the client's timeout), a slow answer, or garbage. It records what it was
 * asked. Its threads are libmicrohttpd's; every function here is safe from
 * any thread.
 */
#ifndef DG_FAKE_JUDGE_H
#define DG_FAKE_JUDGE_H

#include <stddef.h>

typedef enum fj_kind {
    FJ_ANSWER = 0, /* 200 with label and probability */
    FJ_FAIL = 1,   /* status (e.g. 500) with an error body */
    FJ_GARBAGE = 2 /* 200 with text that is no chat completion */
} fj_kind;

typedef struct fj_step {
    fj_kind kind;
    const char *label; /* FJ_ANSWER (copied) */
    double probability;
    int status;   /* FJ_FAIL */
    int delay_ms; /* before answering (a hang: longer than the client waits) */
    int hold;     /* answer only once fake_judge_release was called */
} fj_step;

typedef struct fake_judge fake_judge;

/* Start on an ephemeral port; NULL on failure. */
fake_judge *fake_judge_start(void);

/* Stop and free (waits for requests in flight; NULL is fine). */
void fake_judge_stop(fake_judge *f);

/* The base URL for judge.baseUrl ("http://127.0.0.1:<port>/v1"). */
const char *fake_judge_url(const fake_judge *f);

/* Append a step to the script. */
void fake_judge_push(fake_judge *f, fj_step step);

/* The step used once the script is empty (initially: FJ_FAIL 503). */
void fake_judge_default(fake_judge *f, fj_step step);

/* Let the held steps answer (now and from now on). */
void fake_judge_release(fake_judge *f);

/* Requests answered or being answered so far. */
int fake_judge_requests(fake_judge *f);

/* Wait until n requests have come (up to wait_ms); 1 when they did. */
int fake_judge_wait_requests(fake_judge *f, int n, int wait_ms);

/* The last request's body and Authorization header (malloc'd copies the
 * caller frees; NULL when none). */
char *fake_judge_last_body(fake_judge *f);
char *fake_judge_last_auth(fake_judge *f);

#endif
