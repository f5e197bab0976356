/*
 * channels.c -- channel endpoints of the Discord client: the channel-name
 * rule, create a private channel, find a channel by name. See discord.h.
 */
#include "discord_int.h"

#include <locale.h>
#include <wctype.h>

#include "utf8.h"

/* Spaces, line breaks, controls and invisible format characters of Unicode
 * (Zs, Zl, Zp, Cc and the Cf marks that render as nothing): Discord turns
 * spaces into dashes and a name with invisible marks only looks like
 * another one. The joiner U+200D and the variation selectors stay allowed:
 * emoji sequences are built with them. */
static int invisible_or_space(unsigned long cp)
{
    static const unsigned long ranges[][2] = {
        {0x0000, 0x0020}, {0x007F, 0x00A0}, {0x00AD, 0x00AD}, {0x061C, 0x061C},
        {0x115F, 0x1160}, {0x1680, 0x1680}, {0x180E, 0x180E}, {0x2000, 0x200C},
        {0x200E, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x206F}, {0x3000, 0x3000},
        {0x3164, 0x3164}, {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFFB},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1])
            return 1;
    return 0;
}

static locale_t utf8_locale;
static pthread_once_t utf8_locale_once = PTHREAD_ONCE_INIT;

static void utf8_locale_init(void)
{
    /* A private locale object: the process's own locale is left alone. */
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* 1 when cp is an upper-case letter (it has a lower-case form). Without a
 * UTF-8 locale in libc only ASCII can be told. */
static int upper_case(unsigned long cp)
{
    if (cp < 0x80)
        return cp >= 'A' && cp <= 'Z';
    pthread_once(&utf8_locale_once, utf8_locale_init);
    return utf8_locale && (unsigned long)towlower_l((wint_t)cp, utf8_locale) != cp;
}

int dg_discord_check_channel_name(const char *name, char *why, size_t why_len)
{
    char scratch[4];
    if (!why || !why_len) {
        why = scratch;
        why_len = sizeof scratch;
    }
    if (!name || !*name) {
        snprintf(why, why_len, "name is empty; give 1 to %d characters", DG_DISCORD_MAX_NAME);
        return DG_ERR_INVALID;
    }
    long n = dg_utf8_count_valid(name);
    if (n < 0) {
        snprintf(why, why_len, "name is not valid UTF-8");
        return DG_ERR_INVALID;
    }
    if (n > DG_DISCORD_MAX_NAME) {
        snprintf(why, why_len, "name has %ld characters; Discord allows 1 to %d", n,
                 DG_DISCORD_MAX_NAME);
        return DG_ERR_INVALID;
    }
    size_t left = strlen(name);
    for (const char *c = name; *c;) {
        size_t l;
        unsigned long cp = dg_utf8_decode(c, left, &l);
        c += l;
        left -= l;
        if (invisible_or_space(cp)) {
            snprintf(why, why_len,
                     "name contains whitespace, a control or an invisible character (U+%04lX); "
                     "text-channel names use '-' instead of spaces",
                     cp);
            return DG_ERR_INVALID;
        }
        if (upper_case(cp)) {
            snprintf(why, why_len,
                     "name contains the upper-case letter U+%04lX; text-channel "
                     "names are lower case",
                     cp);
            return DG_ERR_INVALID;
        }
    }
    return DG_OK;
}

int dg_discord_create_private_channel(dg_discord *d, const dg_discord_channel_spec *spec,
                                      char **channel_id, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (channel_id)
        *channel_id = NULL;
    if (!d || !spec || !channel_id)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "create channel: missing argument");
    const char *guild = spec->guild_id ? spec->guild_id : d->guild_id;
    if (!guild)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "create channel: no guild: set discord.guildId in the plugin config");
    if (!dg_snowflake_valid(guild))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "create channel: guild id must be a snowflake (1-20 digits)");
    char why[160];
    if (dg_discord_check_channel_name(spec->name, why, sizeof why) != DG_OK)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "create channel: %s", why);
    if (spec->topic) {
        long tn = dg_utf8_count_valid(spec->topic);
        if (tn < 0 || tn > DG_DISCORD_MAX_TOPIC)
            return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                               "create channel: topic must be valid UTF-8 of at most %d characters",
                               DG_DISCORD_MAX_TOPIC);
    }
    if (spec->parent_id && !dg_snowflake_valid(spec->parent_id))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "create channel: parentId must be a snowflake (1-20 digits)");
    if (spec->n_members && !spec->member_ids)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "create channel: member list missing");
    for (size_t i = 0; i < spec->n_members; i++)
        if (!dg_snowflake_valid(spec->member_ids[i]))
            return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                               "create channel: member %zu (\"%.40s\") is not a snowflake", i,
                               spec->member_ids[i] ? spec->member_ids[i] : "(null)");

    char allow[24], deny[24];
    snprintf(allow, sizeof allow, "%llu",
             (unsigned long long)(DG_PERM_VIEW_CHANNEL | DG_PERM_SEND_MESSAGES |
                                  DG_PERM_READ_MESSAGE_HISTORY));
    snprintf(deny, sizeof deny, "%llu", (unsigned long long)DG_PERM_VIEW_CHANNEL);
    json_t *ow = json_array();
    int bad = json_array_append_new(
        ow, json_pack("{s:s, s:i, s:s, s:s}", "id", guild, "type", 0, "allow", "0", "deny", deny));
    for (size_t i = 0; i < spec->n_members; i++) {
        int dup = !strcmp(spec->member_ids[i], guild);
        for (size_t k = 0; k < i && !dup; k++)
            dup = !strcmp(spec->member_ids[k], spec->member_ids[i]);
        if (dup)
            continue;
        bad |=
            json_array_append_new(ow, json_pack("{s:s, s:i, s:s, s:s}", "id", spec->member_ids[i],
                                                "type", 1, "allow", allow, "deny", "0"));
    }
    json_t *body =
        json_pack("{s:s, s:i, s:o}", "name", spec->name, "type", 0, "permission_overwrites", ow);
    if (body && spec->topic)
        bad |= json_object_set_new(body, "topic", json_string(spec->topic));
    if (body && spec->parent_id)
        bad |= json_object_set_new(body, "parent_id", json_string(spec->parent_id));
    char *json = dgd_dump_checked(body, bad);
    if (!json)
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "create channel: out of memory");

    char path[64];
    snprintf(path, sizeof path, "/guilds/%s/channels", guild);
    json_t *resp = NULL;
    int rc = dgd_do_request(d, "POST", path, json, 0, &resp, err);
    free(json);
    if (rc != DG_OK)
        return rc;
    const char *id = json_string_value(json_object_get(resp, "id"));
    if (!id || !dg_snowflake_valid(id)) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_IO, err ? err->http_status : 0, 0,
                           "create channel: Discord's answer has no channel id");
    }
    *channel_id = strdup(id);
    json_decref(resp);
    if (!*channel_id)
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "create channel: out of memory");
    return DG_OK;
}

int dg_discord_find_channel(dg_discord *d, const char *guild_id, const char *name,
                            const char *topic_needle, char **channel_id, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (channel_id)
        *channel_id = NULL;
    if (!d || !name || !channel_id)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "find channel: missing argument");
    const char *guild = guild_id ? guild_id : d->guild_id;
    if (!guild || !dg_snowflake_valid(guild))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "find channel: guild id must be a snowflake (1-20 digits)");
    char path[64];
    snprintf(path, sizeof path, "/guilds/%s/channels", guild);
    json_t *resp;
    int rc = dgd_get_json(d, "find channel", path, JSON_ARRAY, &resp, err);
    if (rc != DG_OK)
        return rc;
    const char *best = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(resp, i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *cname = json_string_value(json_object_get(c, "name"));
        const char *topic = json_string_value(json_object_get(c, "topic"));
        if (!id || !dg_snowflake_valid(id) || !cname || strcmp(cname, name) != 0 ||
            json_integer_value(json_object_get(c, "type")) != 0)
            continue;
        if (topic_needle && (!topic || !strstr(topic, topic_needle)))
            continue;
        if (!best || dg_snowflake_cmp(id, best) > 0)
            best = id;
    }
    if (best && !(*channel_id = strdup(best))) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "find channel: out of memory");
    }
    json_decref(resp);
    return DG_OK;
}
