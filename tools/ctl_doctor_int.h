/*
 * ctl_doctor_int.h -- what the doctor's files share: its findings and the
 * config it read. Not for other modules (ctl_doctor.h is).
 */
#ifndef DG_CTL_DOCTOR_INT_H
#define DG_CTL_DOCTOR_INT_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#include "config.h"

#define DOCTOR_MAX_SECRETS 64
#define DOCTOR_TEXT_MAX 1024

typedef enum { DOCTOR_OK, DOCTOR_WARN, DOCTOR_ERROR } doctor_level;

typedef struct doctor {
    int json;
    json_t *findings; /* --json: the lines, printed at the end */
    int errors, warnings;
    const char
        *secrets[DOCTOR_MAX_SECRETS]; /* borrowed from the config: scrubbed from every line */
    size_t n_secrets;
    json_t *root;     /* the whole config, resolved */
    json_t *env_vars; /* env.vars of the config (borrowed), may be NULL */
    dg_config cfg;
    int cfg_ok;
    int claim_hooks;     /* 1 yes, 0 no, -1 unknown */
    const char *version; /* OpenClaw's, or NULL */
    char config_file[PATH_MAX];
} doctor;

/* Scrub s (borrowed; it outlives d) from every later finding. */
void doctor_keep_secret(doctor *d, const char *s);

/* One finding; what and fix are formatted by the caller. fix NULL: none.
 * Every token the config names is scrubbed from both first. */
void doctor_say(doctor *d, doctor_level lv, const char *what, const char *fix);

/* doctor_say() with printf-style what; fix is fixed text or NULL. */
void doctor_sayf(doctor *d, doctor_level lv, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* o[a][b][c][e], the keys up to the first NULL; NULL when a level is missing. */
json_t *doctor_at(json_t *o, const char *a, const char *b, const char *c, const char *e);

/* ---- ctl_doctor_net.c ---- */

/* 1 when s is an example's placeholder: YOUR_..., your-..., <...>. */
int doctor_is_placeholder(const char *s);

/* Every key and string value of the config that is a placeholder: an
 * error each (offline; nothing is asked). */
void doctor_check_placeholders(doctor *d);

/* 1 when the host of base (the API base URL at config key `key`) resolves
 * here, or is reached through a proxy; else 0 after an error that blames
 * the network (DNS, proxy), not the tokens. platform: "Discord", "Slack". */
int doctor_host_resolves(doctor *d, const char *platform, const char *key, const char *base);

/* ---- ctl_doctor_discord.c ---- */

/* The Discord part: each token's account, the guild's roles and members,
 * who sees and may post in each channel, the moderator's permissions. */
void doctor_check_discord(doctor *d);

/* ---- ctl_doctor_slack.c ---- */

/* The Slack part: the Web API used, each bot token's owner (auth.test),
 * the moderator's scopes, who is a member of each configured channel. */
void doctor_check_slack(doctor *d);

#endif
