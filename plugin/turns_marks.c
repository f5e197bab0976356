/*
 * turns_marks.c -- silenced runs (turns_engine.h "Silenced runs"): the
 * ring of swapped and claimed runs whose texts are cancelled and whose end
 * is judged by how they were decided.
 * Records and locking: turns_int.h, turns_engine.c.
 */
#include "turns_int.h"

/* ---- silenced runs (marks) ------------------------------------------------------ */

static uint64_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

static int mark_is(const turns_mark *m, uint64_t h, const char *key)
{
    return m->sess_h == h && strcmp(m->session_key, key) == 0;
}

/* Remember run (session key, run_id or NULL) as silenced. Any thread. A
 * repeat for the same run refreshes its mark. Out of memory: the mark is
 * not kept (logged); the turn-order checks still apply. */
void turns_mark_add(dg_turns *t, const char *key, const char *run_id, turns_mark_kind kind,
                    int64_t seen_seq)
{
    if (run_id && !*run_id)
        run_id = NULL;
    uint64_t h = key_hash(key);
    pthread_mutex_lock(&t->mk_mu);
    turns_mark *m = NULL;
    for (size_t i = 0; i < DG_RUN_MARKS && !m; i++) {
        turns_mark *x = &t->marks[i];
        if (mark_is(x, h, key) &&
            (run_id ? x->run_id && strcmp(x->run_id, run_id) == 0 : !x->run_id && x->live))
            m = x;
    }
    if (!m) {
        m = &t->marks[t->mk_next++ % DG_RUN_MARKS];
        free(m->session_key);
        free(m->run_id);
        memset(m, 0, sizeof *m);
        m->session_key = strdup(key);
        m->run_id = run_id ? strdup(run_id) : NULL;
        if (!m->session_key || (run_id && !m->run_id)) {
            free(m->session_key);
            free(m->run_id);
            memset(m, 0, sizeof *m);
            pthread_mutex_unlock(&t->mk_mu);
            dg_log(t->p, OC_LOG_ERROR,
                   "turns: out of memory remembering the silenced run of "
                   "%s; its texts are judged by the turn order only",
                   key);
            return;
        }
        m->sess_h = h;
    }
    if (m->kind != TURNS_MARK_CLAIMED)
        m->kind = kind; /* a claimed run makes no model call: it stays claimed */
    m->live = 1;
    m->seen_seq = seen_seq;
    pthread_mutex_unlock(&t->mk_mu);
}

/* The session got a decision that is not silenced: its marks no longer
 * match by session (those with a run id still match by run id). */
void turns_mark_end_session(dg_turns *t, const char *key)
{
    uint64_t h = key_hash(key);
    pthread_mutex_lock(&t->mk_mu);
    for (size_t i = 0; i < DG_RUN_MARKS; i++)
        if (t->marks[i].live && mark_is(&t->marks[i], h, key))
            t->marks[i].live = 0;
    pthread_mutex_unlock(&t->mk_mu);
}

/* The mark of run (key, run_id or NULL): its kind (TURNS_MARK_NONE: none) and
 * *seen. *other_run (may be NULL): 1 when no mark matched but the session
 * has a live mark of another run id (the run asked about is not that
 * silenced one). Newest first. Any thread. */
turns_mark_kind turns_mark_find(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                                int *other_run)
{
    return turns_mark_find_ex(t, key, run_id, seen, other_run, NULL);
}

/* As turns_mark_find; *exact (may be NULL): the mark matched by run id. */
turns_mark_kind turns_mark_find_ex(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                                   int *other_run, int *exact)
{
    if (run_id && !*run_id)
        run_id = NULL;
    uint64_t h = key_hash(key);
    turns_mark_kind k = TURNS_MARK_NONE;
    int other = 0;
    pthread_mutex_lock(&t->mk_mu);
    for (size_t n = 0; n < DG_RUN_MARKS && k == TURNS_MARK_NONE; n++) {
        const turns_mark *m = &t->marks[(t->mk_next + DG_RUN_MARKS - 1 - n) % DG_RUN_MARKS];
        if (!m->sess_h || !mark_is(m, h, key))
            continue;
        int match = run_id && m->run_id ? strcmp(run_id, m->run_id) == 0 : m->live;
        if (match) {
            k = m->kind;
            if (seen)
                *seen = m->seen_seq;
            if (exact)
                *exact = run_id && m->run_id;
        } else if (run_id && m->run_id && m->live) {
            other = 1;
        }
    }
    pthread_mutex_unlock(&t->mk_mu);
    if (other_run)
        *other_run = k == TURNS_MARK_NONE && other;
    return k;
}

void turns_marks_free(dg_turns *t)
{
    for (size_t i = 0; i < DG_RUN_MARKS; i++) {
        free(t->marks[i].session_key);
        free(t->marks[i].run_id);
    }
    memset(t->marks, 0, sizeof t->marks);
}
