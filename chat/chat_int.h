/*
 * chat_int.h -- what a platform implementation of chat.h provides: a
 * table of methods and the state behind them. Not for the core (chat.h
 * is); chat.c dispatches through the table.
 */
#ifndef DG_CHAT_INT_H
#define DG_CHAT_INT_H

#include "chat.h"

/* One platform. Every method gets the implementation's own state (impl);
 * strings and structs are as in chat.h. Every method is required but
 * find_by_key: a platform that deduplicates posts itself leaves it NULL,
 * and dg_chat_find_by_key answers DG_ERR_UNSUPPORTED. */
typedef struct dg_chat_methods {
    dg_platform platform;
    void (*free)(void *impl);
    void (*set_abort)(void *impl, int on);
    size_t default_max_text;
    size_t (*max_text)(const void *impl);
    int (*user_id_valid)(const char *id);
    int (*channel_id_valid)(const char *id);
    int (*thread_id_valid)(const char *id); /* a thread's own id (Discord: a channel's;
                                               Slack: its parent message's ts) */
    int (*check_room_name)(const char *name, char *why, size_t why_len);
    int (*post)(void *impl, const dg_chat_post_spec *p, char *message_id, dg_chat_err *err);
    int (*find_by_key)(void *impl, const char *channel_id, const char *thread_id, const char *key,
                       int *found, char *message_id, dg_chat_err *err);
    int (*room_create)(void *impl, const dg_chat_room_spec *spec, char *room_id, dg_chat_err *err);
    int (*room_find)(void *impl, const char *name, const char *topic_needle, int *found,
                     char *room_id, dg_chat_err *err);
    int (*room_remove)(void *impl, const char *room_id, dg_chat_err *err);
    int (*room_admit)(void *impl, const char *room_id, const dg_chat_room_spec *spec,
                      dg_chat_err *err);
    int (*user_names)(void *impl, const char *user_id, char *handle, size_t handle_len,
                      char *display, size_t display_len, dg_chat_err *err);
    /* The pipe: opaque to chat.c. */
    int (*pipe_new)(void *impl, size_t cap, void **pipe);
    void (*pipe_free)(void *pipe);
    int (*post_prepare)(void *impl, const dg_chat_post_spec *spec, void **post, dg_chat_err *err);
    void (*post_free)(void *post);
    int (*pipe_submit)(void *pipe, uint64_t tag, void *post, dg_chat_err *err);
    size_t (*pipe_busy)(const void *pipe);
    size_t (*pipe_run)(void *pipe, long wait_ms, dg_chat_done *done);
    void (*pipe_wakeup)(void *pipe);
} dg_chat_methods;

/* Each platform's constructor: *impl owned by the caller (methods->free). */
int dg_chat_discord_open(const dg_chat_options *o, void **impl, char *err, size_t err_len);
int dg_chat_slack_open(const dg_chat_options *o, void **impl, char *err, size_t err_len);
extern const dg_chat_methods dg_chat_discord_methods;
extern const dg_chat_methods dg_chat_slack_methods;

/* The kind of a failure known only by its status (a refusal made before any
 * request, a platform answer no table names): DG_CHAT_ERR_TRANSIENT when
 * retryable or DG_ERR_IO, else by the status (DENIED: permission,
 * NOT_FOUND: gone, INVALID and CONFLICT: invalid, the rest: local). */
dg_chat_err_kind dg_chat_kind_of_status(int rc, int retryable);

/* Fill err (may be NULL) for a refusal made before any request, its kind
 * from rc. Returns rc. */
int dg_chat_refuse(dg_chat_err *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
