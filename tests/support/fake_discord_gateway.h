/*
 * fake_discord_gateway.h -- internal: the Discord gateway websocket of the
 * fake Discord (fake_discord_gateway.c) and the few things it needs from
 * the REST side (fake_discord.c). Not for tests; they use fake_discord.h.
 *
 * Locking: there is one lock, the fake's mutex. Functions marked "locked"
 * expect it held by the caller; the gateway's connection threads take it
 * themselves around every state change and never hold it across I/O.
 */
#ifndef DG_FAKE_DISCORD_GATEWAY_H
#define DG_FAKE_DISCORD_GATEWAY_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

#include "fake_discord.h"

typedef struct fd_gateway fd_gateway;

/* ---- provided by fake_discord.c ---- */

/* The fake's mutex and its condition (CLOCK_MONOTONIC), for the gateway's
 * ws_server; valid from fake_discord_start to the end of fake_discord_stop. */
pthread_mutex_t *fdi_mutex(fake_discord *fd);
pthread_cond_t *fdi_cond(fake_discord *fd);
/* Wake waiters on the fake's condition (locked). */
void fdi_changed(fake_discord *fd);
/* The user id of a bot token, or NULL (locked; borrowed until unlock). */
const char *fdi_user_for_token(fake_discord *fd, const char *token);
/* NEW user object {id, username, bot, discriminator, global_name, avatar} (locked). */
json_t *fdi_user_json(fake_discord *fd, const char *user_id);
/* NEW guild object as GUILD_CREATE carries it: channels, threads, members,
 * roles (locked). */
json_t *fdi_guild_create(fake_discord *fd);
/* 1 when user may see the channel (VIEW_CHANNEL; threads follow their
 * parent), also when permission checks are off (locked). */
int fdi_can_view(fake_discord *fd, const char *channel_id, const char *user_id);
int fdi_port(const fake_discord *fd);
/* The application flags READY and /oauth2/applications/@me report. */
int fdi_app_flags(void);

/* ---- provided by fake_discord_gateway.c ---- */

/* A gateway for fd (heartbeat_ms: the interval HELLO announces). NULL when
 * out of memory. Free with fdg_free after fdg_shutdown. Main thread. */
fd_gateway *fdg_new(fake_discord *fd, long heartbeat_ms);

/* Close every websocket (1001) and join their threads; new upgrades are
 * refused from now on. Call without the lock and before MHD_stop_daemon
 * (MHD must not see upgraded sockets still open). */
void fdg_shutdown(fd_gateway *g);

/* Free sessions and connections; after fdg_shutdown. NULL is fine. */
void fdg_free(fd_gateway *g);

/* Answer a websocket upgrade request on c (MHD's access handler thread,
 * without the lock): 101 and a connection thread, or a 400 that says why. */
enum MHD_Result fdg_upgrade(fd_gateway *g, struct MHD_Connection *c);

/* Send dispatch event t with data d (borrowed) to every session whose user
 * can see channel_id (NULL: every session); sessions that are disconnected
 * keep it for a RESUME (locked). */
void fdg_dispatch(fd_gateway *g, const char *t, json_t *d, const char *channel_id);

/* NEW array, one object per open websocket: {userId, sessionId, seq,
 * identified, connectedAtMs} (locked). */
json_t *fdg_sessions(fd_gateway *g);

/* Open websockets whose session is identified (READY sent) (locked). */
size_t fdg_identified(fd_gateway *g);

#endif
