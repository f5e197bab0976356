/*
 * judge.h -- the chair's judge: "which of these agents should speak next,
 * or nobody?" asked of a decision model for a few hundred tokens instead
 * of a full agent run. This part holds what knows no engine and no host:
 *   - the evidence (dgj_context): the last few messages, truncated, and
 *     each candidate's one-line role, as plain text; nothing else (no
 *     tokens, no other channels) ever goes in;
 *   - the answer's parsers: a decision model's {label, probability} (the
 *     host's decide call, ABI 1.2) and an OpenAI-compatible chat
 *     completion carrying that object in its message;
 *   - the OpenAI-compatible client on http/'s request core (judge_openai.c).
 * The policy (what an answer does to the turn, the fallbacks) is the
 * plugin's (plugin/judge_policy.h).
 *
 * No state of its own; a dgj_openai belongs to its user. Any thread.
 */
#ifndef DG_JUDGE_H
#define DG_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "must_check.h"

/* The label that ends the round instead of naming an agent. */
#define DGJ_NOBODY "nobody"

/* Bounds of the evidence: the messages kept, the characters kept of each
 * message and of each role. */
#define DGJ_MAX_MESSAGES 6
#define DGJ_MESSAGE_CHARS 400
#define DGJ_ROLE_CHARS 160
/* Labels of one question: 2..DGJ_MAX_LABELS (the ABI's bound), each an
 * agent id or DGJ_NOBODY, at most DGJ_LABEL_MAX - 1 bytes. */
#define DGJ_MAX_LABELS 32
#define DGJ_LABEL_MAX 64
/* A source's name as an answer reports it ("openai:gpt-4o-mini"). */
#define DGJ_SOURCE_MAX 96

/* The question every judge is asked. */
#define DGJ_QUESTION                                                                               \
    "Which of these agents should speak next in this conversation, or nobody (the question is "    \
    "settled or needs no agent)?"

/* One message of the evidence: who wrote it ("alice", an agent id) and
 * what (both borrowed, may be NULL: "?" and ""). */
typedef struct dgj_message {
    const char *author;
    const char *text;
} dgj_message;

/* One candidate: its agent id (a label) and its one-line role (borrowed;
 * NULL: none given). */
typedef struct dgj_candidate {
    const char *id;
    const char *role;
} dgj_candidate;

/* What a judge is shown. messages oldest first; only the last
 * DGJ_MAX_MESSAGES count. allow_nobody: DGJ_NOBODY is a label. */
typedef struct dgj_evidence {
    const dgj_message *messages;
    size_t n_messages;
    const dgj_candidate *candidates;
    size_t n_candidates;
    int allow_nobody;
} dgj_evidence;

/* The labels of ev: each candidate's id in order, then DGJ_NOBODY when
 * allowed. labels[] points into ev (borrowed) or at a static string.
 * Returns the count, or 0 when ev has none or too many (more than
 * DGJ_MAX_LABELS, fewer than 2). */
size_t dgj_labels(const dgj_evidence *ev, const char *labels[DGJ_MAX_LABELS]);

/* The evidence as plain text (malloc'd, the caller frees; NULL when out
 * of memory): the candidates with their roles, then the last messages,
 * each cut to DGJ_MESSAGE_CHARS characters (UTF-8 kept whole). */
char *dgj_context(const dgj_evidence *ev) DG_MUST_CHECK;

/* A judge's answer. */
typedef struct dgj_answer {
    char label[DGJ_LABEL_MAX]; /* one of the labels asked */
    double probability;        /* 0..1 */
    char source[DGJ_SOURCE_MAX];
    int64_t tokens_in, tokens_out; /* -1: not reported */
    int timed_out;                 /* set by dgj_openai_ask when no answer came in time */
} dgj_answer;

/*
 * The answer object {"label", "probability", "source"?, "tokensIn"?,
 * "tokensOut"?} (the ABI 1.2 decide answer, or the JSON a chat model
 * wrote) checked against labels[0..n): the label one of them, the
 * probability a number in 0..1, the counts non-negative integers. Extra
 * keys are ignored (a model may add its reasons). DG_OK with *out set, or
 * DG_ERR_INVALID with err naming the field and the rule (*out then
 * undefined).
 */
int dgj_parse_answer(const json_t *o, const char *const *labels, size_t n, dgj_answer *out,
                     char *err, size_t err_len) DG_MUST_CHECK;

/*
 * An OpenAI-compatible chat completion's body (len bytes, need not be
 * NUL-terminated): choices[0].message.content holds the answer object,
 * alone or inside other text (the first '{' to the last '}'); usage's
 * prompt_tokens / completion_tokens are the token counts. The source is
 * "openai:" and the body's model (else unset). DG_OK, or DG_ERR_INVALID
 * with err saying what was wrong.
 */
int dgj_parse_chat_completion(const char *body, size_t len, const char *const *labels, size_t n,
                              dgj_answer *out, char *err, size_t err_len) DG_MUST_CHECK;

/* The request body of a chat completion asking model the question with
 * labels and context (a NEW json_t the caller decrefs; NULL when out of
 * memory). */
json_t *dgj_chat_request(const char *model, const char *const *labels, size_t n,
                         const char *context) DG_MUST_CHECK;

/* ---- judge_openai.c: the OpenAI-compatible client ---- */

typedef struct dgj_openai dgj_openai;

/* Log sink: level as common/log_level.h; called on the asking thread. */
typedef void (*dgj_log_fn)(void *log_state, int level, const char *message);

/*
 * A client of base_url ("http://127.0.0.1:8080/v1": POST base_url +
 * "/chat/completions") with model and api_key (NULL or "": no
 * Authorization header; copied, scrubbed from every log line). *out owned
 * by the caller: dgj_openai_free. DG_OK, DG_ERR_INVALID (base_url not
 * http(s), no model; err says which), DG_ERR_NOMEM, DG_ERR_IO (libcurl's
 * init failed).
 */
int dgj_openai_new(const char *base_url, const char *model, const char *api_key, dgj_log_fn log,
                   void *log_state, dgj_openai **out, char *err, size_t err_len) DG_MUST_CHECK;

/* Stop every request in flight (they fail within about 50 ms) and refuse
 * new ones: before dgj_openai_free while another thread may ask. */
void dgj_openai_abort(dgj_openai *c);

/* Free c (NULL is fine); no request may be in flight. */
void dgj_openai_free(dgj_openai *c);

/*
 * Ask: one POST, bounded by timeout_ms as a whole (connect included), no
 * retry (a late answer is worth nothing). DG_OK with *out; DG_ERR_IO with
 * err saying why (timeout, connection, HTTP status, aborted) and
 * out->timed_out set for a timeout (told by the transfer, not by the
 * latency, which the caller's clock may read a millisecond short);
 * DG_ERR_INVALID when the answer cannot be read (err says what); the
 * latency in *latency_ms either way (may be NULL). Blocks the calling
 * thread: never a hook thread.
 */
int dgj_openai_ask(dgj_openai *c, const char *const *labels, size_t n, const char *context,
                   long timeout_ms, dgj_answer *out, int64_t *latency_ms, char *err,
                   size_t err_len) DG_MUST_CHECK;

#endif
