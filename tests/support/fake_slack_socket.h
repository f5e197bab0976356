/*
 * fake_slack_socket.h -- Socket Mode for the fake Slack (fake_slack.h):
 * apps.connections.open on the Web API and the websocket it hands out, on
 * a loopback port of its own (Slack's is wss-primary.slack.com, not the
 * Web API's host), plus that port's control endpoints.
 *
 * Every message the fake stores (a chat.postMessage, an injected human
 * message) goes to each app whose bot user is a member of the channel and
 * that has a websocket open, as an "events_api" envelope carrying a
 * `message` event (channel_type "channel" or "group"); an app whose bot
 * user is mentioned (<@U...>) by someone else gets an `app_mention` event
 * too, as Slack sends both. member_joined_channel goes the same way. One
 * connection of an app gets each envelope (the newest), as Slack picks one.
 * Envelopes to an app with no websocket open are dropped and recorded as
 * undelivered. Acks ({"envelope_id":...}) are recorded; nothing is
 * retried.
 *
 * The protocol (as @slack/socket-mode speaks it): apps.connections.open
 * with the app-level token -> {"ok":true,"url":"ws://127.0.0.1:PORT/link/
 * ?ticket=..."}; a ticket works once. On connect the server sends
 * {"type":"hello","num_connections":N,...}; pings are answered with pongs;
 * {"type":"disconnect","reason":...} asks the client to reconnect.
 *
 * Control endpoints on the socket port (no token, JSON out):
 *   GET  /_fake/socket/health       {"ok":true,"url":"ws://127.0.0.1:PORT"}
 *   GET  /_fake/socket/connections  open websockets: {id, appId, userId,
 *                                   connectedAtMs, helloSent}
 *   GET  /_fake/socket/envelopes[?since=SEQ]  every envelope: {seq,
 *                                   envelopeId, appId, connId (0: none was
 *                                   open), eventType, eventId, channel, ts,
 *                                   user, sentAtMs, acked, ackedAtMs,
 *                                   ackPayload}
 *   POST /_fake/socket/disconnect[?app=A...&reason=R]  send a disconnect
 *                                   message to the app's (or every)
 *                                   websocket: {"disconnected":N}
 *
 * Locking: one mutex of its own; never held while calling fake_slack_*.
 */
#ifndef DG_FAKE_SLACK_SOCKET_H
#define DG_FAKE_SLACK_SOCKET_H

#include <stddef.h>
#include <jansson.h>

#include "fake_slack.h"

typedef struct fake_slack_socket fake_slack_socket;

/* Start the websocket listener on 127.0.0.1:port (0: any free port),
 * register apps.connections.open and a message listener on fs (before any
 * traffic, as fake_slack_on_message requires). Returns 0 and *out, or -1
 * with a reason in err. Stop fs first, then the socket (fake_slack_stop
 * ends every call into it). */
int fake_slack_socket_start(fake_slack *fs, int port, fake_slack_socket **out, char *err,
                            size_t err_len);

/* Close every websocket (1001), join the threads, free. NULL is fine. */
void fake_slack_socket_stop(fake_slack_socket *s);

int fake_slack_socket_port(const fake_slack_socket *s);

/* An app with Socket Mode: its app-level token ("xapp-1-A...-..."), its
 * app id and its bot user (a user added with fake_slack_add_user; events
 * follow that user's channel memberships). Registers the token with
 * fake_slack_add_app_token too. Strings are copied. 0, or -1 (missing
 * field, duplicate token, full, no memory). Up to 32 apps. */
int fake_slack_socket_add_app(fake_slack_socket *s, const char *app_token, const char *app_id,
                              const char *bot_user_id);

/* Open websockets that received hello, of one app (NULL: all). */
size_t fake_slack_socket_connected(fake_slack_socket *s, const char *app_id);

/* Wait until at least n websockets of app_id (NULL: any app) have their
 * hello; 0, or -1 on timeout. */
int fake_slack_socket_wait_connected(fake_slack_socket *s, const char *app_id, size_t n,
                                     long timeout_ms);

/* The control endpoints' views as NEW arrays (caller decrefs). */
json_t *fake_slack_socket_connections(fake_slack_socket *s);
json_t *fake_slack_socket_envelopes(fake_slack_socket *s, long since);

/* Envelopes acked so far. */
size_t fake_slack_socket_acked(fake_slack_socket *s);

/* Wait until at least n envelopes were sent (acked when `acked`); 0 or -1. */
int fake_slack_socket_wait_envelopes(fake_slack_socket *s, size_t n, int acked, long timeout_ms);

/* Send {"type":"disconnect","reason":reason} to every websocket of app_id
 * (NULL: all); returns how many got it. */
size_t fake_slack_socket_disconnect(fake_slack_socket *s, const char *app_id, const char *reason);

#endif
