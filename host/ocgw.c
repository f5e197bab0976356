/*
 * ocgw.c -- the reference gateway: an OpenClaw-style host on the host core
 * (ochost.h) that loads native plugins, serves Discord or Slack channels
 * over REST polling, and runs scripted agents (see ocgw.h for the file map).
 *
 *   ocgw --config host.json [--state-dir DIR] [--poll-ms N] [--log-level L]
 *        [--expect story.json] [--timeout-ms N] [--transcript FILE] [--quiet]
 *        [--verbose]
 *   ocgw --config host.json --check     load the plugins, report, exit
 *
 * Exit status: 0 after SIGTERM/SIGINT (gateway_stop fired), or with
 * --expect when the story happened exactly; 1 when the story failed or
 * timed out, or --check found a plugin refused or failed; 2 for a bad
 * command line or config.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocgw.h"


static volatile sig_atomic_t g_stop;
static ocgw *g_self; /* for the REST client's log callback */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- REST client plumbing ------------------------------------------------------------------------- */

static void dc_log(void *state, int level, const char *message)
{
    if (g_self)
        och_log(g_self->host, level, OCGW_SOURCE, "discord client of %s: %s", (const char *)state,
                message);
}

static int make_client(ocgw *g, const char *name, const char *token, dg_discord **out, char *err,
                       size_t n)
{
    if (g->cfg.slack)
        return OC_OK; /* make_slack_client instead */
    dg_discord_options o = {
        .api_base = g->cfg.api_base,
        .token = token,
        .guild_id = g->cfg.guild_id,
        .timeout_ms = g->cfg.timeout_ms,
        .user_agent = "DiscordBot (ocgw, " DG_VERSION ")",
        .log = dc_log,
        .log_state = (void *)name,
    };
    char e[300];
    int rc = dg_discord_new(&o, out, e, sizeof e);
    if (rc)
        snprintf(err, n, "discord client for %s: %s", name, e);
    return rc;
}

/* A participant's Slack caller on a Slack gateway (nothing on Discord). */
static int make_slack_client(ocgw *g, const char *name, const char *token, ocgw_slack **out,
                             char *err, size_t n)
{
    if (!g->cfg.slack)
        return OC_OK;
    char e[300];
    int rc = ocgw_slack_new(g->cfg.api_base, token, g->cfg.timeout_ms, out, e, sizeof e);
    if (rc)
        snprintf(err, n, "slack client for %s: %s", name, e);
    return rc;
}

/* ---- totals ------------------------------------------------------------------------------------------ */

static void print_totals(ocgw *g)
{
    ocgw_state *s = &g->st;
    ocgw_say(g, "== totals (over %ld gateway start%s) ==",
             (long)json_integer_value(json_object_get(s->doc, "starts")),
             json_integer_value(json_object_get(s->doc, "starts")) == 1 ? "" : "s");
    ocgw_say(g, "  messages processed      %ld", ocgw_state_total(s, "messages"));
    ocgw_say(g, "  agent runs              %ld", ocgw_state_total(s, "runs"));
    ocgw_say(g, "  real model calls        %ld", ocgw_state_total(s, "realModelCalls"));
    ocgw_say(g, "  no-reply swaps          %ld (no model cost)",
             ocgw_state_total(s, "noReplySwaps"));
    ocgw_say(g, "  claimed runs            %ld (no model call at all)",
             ocgw_state_total(s, "claimedRuns"));
    ocgw_say(g, "  tool calls              %ld (%ld errors)", ocgw_state_total(s, "toolCalls"),
             ocgw_state_total(s, "toolErrors"));
    ocgw_say(g, "  files written           %ld", ocgw_state_total(s, "filesWritten"));
    ocgw_say(g, "  agent messages posted   %ld", ocgw_state_total(s, "agentPosts"));
    ocgw_say(g, "  sends cancelled         %ld", ocgw_state_total(s, "cancelledSends"));
    ocgw_say(g, "  moderator messages      %ld", ocgw_state_total(s, "moderatorMessages"));
    ocgw_say(g, "  human messages posted   %ld", ocgw_state_total(s, "humanPosts"));
    ocgw_say(g, "  REST requests by ocgw   %ld (this process: %ld)",
             ocgw_state_total(s, "restRequests"), g->rest_requests);
    /* Reads are the gateway's own (polling, look-ups, story checks), made
     * with some member's token: they belong to no agent. */
    ocgw_say(g, "    reads (polling)       %ld", ocgw_state_total(s, "restReads"));
    char posts[512] = "";
    const char *who;
    json_t *n;
    json_object_foreach(ocgw_state_obj(s, "restPostsBy"), who, n) {
        size_t l = strlen(posts);
        snprintf(posts + l, sizeof posts - l, "%s%s %lld", l ? ", " : "", who,
                 (long long)json_integer_value(n));
    }
    ocgw_say(g, "    posts by              %s", *posts ? posts : "nobody");
    ocgw_say(g, "  state                   %s", s->path);
    /* The counterfactual: OpenClaw alone runs every agent on every message
     * but the moderator's (it posts nothing then), each run a model call;
     * with the plugin every run not claimed or swapped made one. */
    long runs = ocgw_state_total(s, "runs");
    long made = runs - ocgw_state_total(s, "claimedRuns") - ocgw_state_total(s, "noReplySwaps");
    long alone = runs - ocgw_state_total(s, "moderatorRuns");
    ocgw_say(g, "  runs on moderator posts %ld (OpenClaw alone: no such post, no such run)",
             ocgw_state_total(s, "moderatorRuns"));
    char *value = ocgw_value_line_made(alone, made);
    ocgw_say(g, "== value: %s ==", value ? value : "(out of memory)");
    free(value);
}

/* ---- main -------------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: ocgw --config host.json [options]\n"
        "  --config FILE       host config (plugins, discord or slack, gateway, channels, agents; "
        "demo/README.md)\n"
        "  --state-dir DIR     overrides gateway.stateDir\n"
        "  --poll-ms N         overrides gateway.pollIntervalMs\n"
        "  --log-level L       debug|info|warn|error (overrides gateway.logLevel)\n"
        "  --expect FILE       check a story; exit 0 when it happened exactly, else 1\n"
        "  --timeout-ms N      overrides the story's timeoutMs\n"
        "  --run-only IDS      overrides gateway.runOnly: the agents and humans this gateway\n"
        "                      runs, comma-separated (the others run on another gateway)\n"
        "  --name NAME         overrides gateway.name: the transcript's line prefix\n"
        "  --transcript FILE   write the transcript there instead of stdout\n"
        "  --quiet             no transcript\n"
        "  -v, --verbose       also the gateway's internal lines (variables, prompt context)\n"
        "  --check             load and check the plugins and the config, print a summary, exit\n"
        "  -h, --help          this text\n"
        "  --version           ocgw's version and plugin ABI\n");
}

/* A whole number of milliseconds for option opt, in lo..hi; 0, or -1 after
 * saying on stderr what is wrong with it. */
static int ms_option(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "ocgw: %s \"%s\": expected a whole number of milliseconds in %ld..%ld\n",
                opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int level_of(const char *s)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* One summary line (the host core has logged each plugin's fate and reason
 * already); 1 when a plugin was refused or its init failed. */
static int report_plugins(ocgw *g)
{
    int bad = 0;
    size_t n = och_plugin_count(g->host);
    char line[1024] = "";
    for (size_t i = 0; i < n; i++) {
        och_plugin_info pi;
        if (och_plugin_get(g->host, i, &pi) != OC_OK)
            continue;
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s=%s", i ? ", " : "",
                 pi.id ? pi.id : pi.dir, och_plugin_state_name(pi.state));
        if (pi.state == OCH_PLUGIN_REFUSED || pi.state == OCH_PLUGIN_FAILED)
            bad = 1;
    }
    if (n == 0)
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE,
                "no plugin found in plugins.load.paths: the gateway runs without plugins");
    else
        och_log(g->host, bad ? OC_LOG_WARN : OC_LOG_INFO, OCGW_SOURCE, "plugins: %s%s", line,
                bad ? " (see the lines above for the reasons)" : "");
    return bad;
}

/* The command line. */
typedef struct ocgw_opts {
    const char *config, *state_dir, *expect_path, *transcript, *run_only, *name;
    long poll_ms, timeout_ms;
    int log_level, check_only, quiet, verbose;
} ocgw_opts;

/* An option that is not one, or lacks its value: said on stderr; exit code 2. */
static int bad_option(int c, char **argv)
{
    if (c == ':')
        fprintf(stderr, "ocgw: option %s needs a value\n", argv[optind - 1]);
    else if (optopt)
        fprintf(stderr, "ocgw: unknown option -%c\n", optopt);
    else
        fprintf(stderr, "ocgw: unknown option %s\n", argv[optind - 1]);
    usage(stderr);
    return 2;
}

/* One option with its value into o: -1 to go on, else the exit code
 * (0 after --help or --version, 2 after saying on stderr what is wrong). */
static int take_option(int c, char **argv, ocgw_opts *o)
{
    switch (c) {
    case 'c': o->config = optarg; return -1;
    case 's': o->state_dir = optarg; return -1;
    case 'p': return ms_option("--poll-ms", optarg, 10, 600000, &o->poll_ms) ? 2 : -1;
    case 'l':
        if ((o->log_level = level_of(optarg)) < 0) {
            fprintf(stderr, "ocgw: --log-level %s: use debug, info, warn or error\n", optarg);
            return 2;
        }
        return -1;
    case 'e': o->expect_path = optarg; return -1;
    case 't': return ms_option("--timeout-ms", optarg, 1, 86400000, &o->timeout_ms) ? 2 : -1;
    case 'T': o->transcript = optarg; return -1;
    case 'R': o->run_only = optarg; return -1;
    case 'N':
        if (!*optarg) {
            fprintf(stderr, "ocgw: --name: expected a non-empty name\n");
            return 2;
        }
        o->name = optarg;
        return -1;
    case 'q': o->quiet = 1; return -1;
    case 'v': o->verbose = 1; return -1;
    case 'k': o->check_only = 1; return -1;
    case 'h': usage(stdout); return 0;
    case 'V':
        printf("ocgw %s (plugin ABI %d.%d)\n", DG_VERSION, OC_ABI_MAJOR, OC_ABI_MINOR);
        return 0;
    default: return bad_option(c, argv);
    }
}

/* The command line into *o: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, ocgw_opts *o)
{
    static const struct option opts[] = {{"config", required_argument, 0, 'c'},
                                         {"state-dir", required_argument, 0, 's'},
                                         {"poll-ms", required_argument, 0, 'p'},
                                         {"log-level", required_argument, 0, 'l'},
                                         {"expect", required_argument, 0, 'e'},
                                         {"timeout-ms", required_argument, 0, 't'},
                                         {"transcript", required_argument, 0, 'T'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"run-only", required_argument, 0, 'R'},
                                         {"name", required_argument, 0, 'N'},
                                         {"check", no_argument, 0, 'k'},
                                         {"help", no_argument, 0, 'h'},
                                         {"version", no_argument, 0, 'V'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->log_level = -1;
    opterr = 0; /* our own words for a bad option */
    int c, rc;
    while ((c = getopt_long(argc, argv, ":c:s:p:l:e:t:T:R:N:qvkhV", opts, NULL)) != -1)
        if ((rc = take_option(c, argv, o)) >= 0)
            return rc;
    if (!o->config || optind != argc) {
        if (optind != argc)
            fprintf(stderr, "ocgw: unexpected argument \"%s\"\n", argv[optind]);
        else
            fprintf(stderr, "ocgw: --config FILE is required\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

/* --run-only "a,b": the same rules as gateway.runOnly, which it replaces. */
static int apply_run_only(ocgw *g, const char *run_only, char *err, size_t err_len)
{
    json_t *list = json_array();
    char *copy = strdup(run_only);
    for (char *save = NULL, *t = copy ? strtok_r(copy, ",", &save) : NULL; t;
         t = strtok_r(NULL, ",", &save))
        json_array_append_new(list, json_string(t));
    free(copy);
    int rc = ocgw_config_run_only(&g->cfg, list, "--run-only", err, err_len);
    json_decref(list);
    return rc;
}

/* The host config with the command line's overrides, the transcript and
 * the story: 0, or the exit code 2 after saying why on stderr. */
static int load_config(ocgw *g, const ocgw_opts *o, ocgw_expect *ex)
{
    char err[1024];
    if (ocgw_config_load(o->config, &g->cfg, err, sizeof err) != OC_OK) {
        fprintf(stderr, "ocgw: %s\n", err);
        return 2;
    }
    /* Plugins take their relative paths (dirigent: dbPath, templatesDir)
     * from the folder of the host's config file, as ocgw does; OpenClaw's
     * own variable tells them where that is, whatever the working directory. */
    if (!g->cfg.config_path || setenv("OPENCLAW_CONFIG_PATH", g->cfg.config_path, 1) != 0) {
        fprintf(stderr, "ocgw: cannot export OPENCLAW_CONFIG_PATH: %s\n", strerror(errno));
        return 2;
    }
    if (o->run_only && apply_run_only(g, o->run_only, err, sizeof err) != OC_OK) {
        fprintf(stderr, "ocgw: %s\n", err);
        return 2;
    }
    if (o->name) {
        free(g->cfg.name);
        g->cfg.name = strdup(o->name);
    }
    if (o->state_dir) {
        free(g->cfg.state_dir);
        g->cfg.state_dir = ocgw_abspath(NULL, o->state_dir);
    }
    if (o->poll_ms)
        g->cfg.poll_ms = o->poll_ms;
    if (o->log_level >= 0)
        g->cfg.log_level = o->log_level;
    g->transcript = stdout;
    if (o->transcript && !(g->transcript = fopen(o->transcript, "a"))) {
        fprintf(stderr, "ocgw: --transcript %s: %s\n", o->transcript, strerror(errno));
        return 2;
    }
    if (o->expect_path && ocgw_expect_load(o->expect_path, ex, err, sizeof err) != 0) {
        fprintf(stderr, "ocgw: --expect %s\n", err);
        return 2;
    }
    if (o->timeout_ms > 0)
        ex->timeout_ms = o->timeout_ms;
    return 0;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* A REST client for each agent and scripted human this gateway runs, and
 * the agents' workspaces: 0, or -1 after logging why. */
static int make_clients(ocgw *g, char *err, size_t err_len)
{
    for (size_t i = 0; i < g->cfg.n_agents; i++) {
        ocgw_agent *a = &g->cfg.agents[i];
        if (!a->local)
            continue; /* another gateway runs it: no token, no client here */
        if (make_client(g, a->id, a->token, &a->dc, err, err_len) != OC_OK ||
            make_slack_client(g, a->id, a->token, &a->sc, err, err_len) != OC_OK ||
            ocgw_mkdirs(a->workspace, 0755) != 0) {
            if (!a->dc && !a->sc)
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
            else
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "agents[%s].workspace %s: %s", a->id,
                        a->workspace, strerror(errno));
            return -1;
        }
    }
    for (size_t i = 0; i < g->cfg.n_humans; i++) {
        ocgw_human *h = &g->cfg.humans[i];
        if (h->local && h->token &&
            (make_client(g, h->id, h->token, &h->dc, err, err_len) != OC_OK ||
             make_slack_client(g, h->id, h->token, &h->sc, err, err_len) != OC_OK)) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
            return -1;
        }
    }
    return 0;
}

/* The host core, the state file, the sessions file and the clients: 0, or
 * the exit code after logging why. *sessions is the caller's to free. */
static int open_host(ocgw *g, char **sessions)
{
    char err[1024];
    g->host = och_host_new();
    if (!g->host) {
        fprintf(stderr, "ocgw: out of memory\n");
        return 1;
    }
    och_host_set_log(g->host, NULL, NULL, g->cfg.log_level);
    och_host_set_claim_hooks(g->host, g->cfg.claim_hooks);
    if (ocgw_decider_new(g->cfg.root, &g->decider, err, sizeof err) != 0) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
        return 2;
    }
    if (g->decider)
        och_host_set_decide(g->host, ocgw_decide, g->decider);
    if (ocgw_state_open(&g->st, g->cfg.state_dir, g->cfg.fsync, err, sizeof err) != 0) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
        return 2;
    }
    *sessions = dg_sprintf("%s/sessions.json", g->cfg.state_dir);
    if (och_host_set_state_file(g->host, *sessions, err, sizeof err) != OC_OK ||
        och_host_configure(g->host, g->cfg.root, g->cfg.config_dir, err, sizeof err) != OC_OK) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
        return 2;
    }
    return make_clients(g, err, sizeof err) ? 2 : 0;
}

/* Load the plugins and check the config against them: -1 to start, else
 * the exit code (--check's verdict, or 2 on a mistake). */
static int load_plugins(ocgw *g, int check_only)
{
    och_host_load(g->host);
    int refused = report_plugins(g);
    int mistakes = ocgw_preflight(g);
    if (check_only) {
        mistakes |= ocgw_check_moderators(g);
        if (!refused && !mistakes)
            ocgw_check_summary(g, stdout);
        return refused || mistakes ? 1 : 0;
    }
    if (mistakes) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "not starting: fix the config (the lines above say what); ocgw --check "
                "tells the same without starting");
        return 2;
    }
    return -1;
}

/* The channels installed, gateway_start dispatched, and the start told. */
static void start_gateway(ocgw *g)
{
    ocgw_install_channels(g);
    ocgw_state_save(&g->st);
    json_t *ev = json_object();
    och_hook_dispatch(g->host, "gateway_start", ev, NULL, NULL);
    json_decref(ev);
    long starts = (long)json_integer_value(json_object_get(g->st.doc, "starts"));
    json_t *tools = och_tools_list(g->host);
    ocgw_say(g,
             "[gateway] started (start %ld): %zu agents, %zu configured channels, %zu tools, "
             "state %s",
             starts, g->cfg.n_agents, g->cfg.n_channels, json_array_size(tools), g->st.path);
    if (g->cfg.split) {
        char mine[512] = "", theirs[512] = "";
        for (size_t i = 0; i < g->cfg.n_agents; i++) {
            char *l = g->cfg.agents[i].local ? mine : theirs;
            snprintf(l + strlen(l), 512 - strlen(l), "%s%s", *l ? ", " : "", g->cfg.agents[i].id);
        }
        for (size_t i = 0; i < g->cfg.n_humans; i++)
            if (g->cfg.humans[i].local && g->cfg.humans[i].n_steps)
                snprintf(mine + strlen(mine), sizeof mine - strlen(mine), ", %s (scripted human)",
                         g->cfg.humans[i].id);
        ocgw_say(g, "[gateway] runs %s here; %s run on another gateway", mine, theirs);
    }
    json_decref(tools);
    och_log(g->host, OC_LOG_INFO, OCGW_SOURCE, "gateway started; polling every %ld ms",
            g->cfg.poll_ms);
}

/* Channels learned but not resolved yet, and reading cursors not set yet;
 * 1 when every channel read has its cursor. */
static int prepare_channels(ocgw *g, int64_t now)
{
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    const char *id;
    json_t *ch;
    int cursors_ready = 1;
    json_object_foreach(chs, id, ch) {
        if (json_is_true(json_object_get(ch, "pending")))
            ocgw_resolve_learned(g, id, ch, now);
        else if ((json_is_null(json_object_get(ch, "cursor")) || !json_object_get(ch, "cursor")) &&
                 ocgw_chan_reader(&g->cfg, ch, 0)) {
            ocgw_init_cursor(g, id, ch, now);
            if (!json_is_string(json_object_get(ch, "cursor")))
                cursors_ready = 0;
        }
    }
    return cursors_ready;
}

/* The message in flight, else the next queued one, else a scripted
 * human's next step; *busy when a message was handled. 1 when it is to be
 * tried again after a poll interval. */
static int handle_next(ocgw *g, int64_t now, int cursors_ready, int *busy)
{
    int rc = 0;
    if (json_is_object(json_object_get(g->st.doc, "inflight"))) {
        rc = ocgw_process_inflight(g);
        *busy = 1;
    } else {
        ocgw_msg m;
        if (ocgw_dequeue(g, &m, now)) {
            ocgw_begin_message(g, &m);
            ocgw_msg_free(&m);
            rc = ocgw_process_inflight(g);
            *busy = 1;
        }
    }
    if (rc == 0 && cursors_ready && !*busy)
        rc = ocgw_humans_fire(g);
    return rc;
}

static void poll_channels(ocgw *g, int64_t now)
{
    const char *id;
    json_t *ch;
    json_object_foreach(ocgw_state_obj(&g->st, "channels"), id, ch) {
        if (g_stop)
            break;
        if (!json_is_true(json_object_get(ch, "pending")) &&
            json_is_string(json_object_get(ch, "cursor")))
            ocgw_poll_channel(g, id, ch, now);
    }
}

/* The story's progress, between messages. *complete_since: when it was
 * first found complete (0: not). -1 to go on, else the exit code. */
static int story_check(ocgw *g, ocgw_expect *ex, int64_t now, int64_t *complete_since)
{
    char why[1024] = "";
    int rc = ocgw_expect_check(g, ex, 0, why, sizeof why);
    if (rc < 0) {
        ocgw_say(g, "== story FAILED: %s ==", why);
        ocgw_expect_check(g, ex, 1, why, sizeof why);
        return 1;
    }
    if (rc == 1 && !*complete_since)
        *complete_since = now;
    else if (rc == 0)
        *complete_since = 0;
    if (rc == 1 && now - *complete_since >= ex->settle_ms) {
        rc = ocgw_expect_check(g, ex, 1, why, sizeof why);
        ocgw_say(g,
                 rc == 1 ? "== story complete: every step happened as written =="
                         : "== story FAILED at the final check: %s ==",
                 why);
        return rc == 1 ? 0 : 1;
    }
    return -1;
}

/* A story that never settles still ends: exit code 1. */
static int story_timed_out(ocgw *g, ocgw_expect *ex, int64_t elapsed)
{
    char why[1024] = "";
    int rc = ocgw_expect_check(g, ex, 0, why, sizeof why);
    ocgw_say(g, "== story TIMED OUT after %ld ms%s%s ==", (long)elapsed, rc == 1 ? "" : ": ",
             rc == 1 ? "" : why);
    ocgw_expect_check(g, ex, 1, why, sizeof why);
    return 1;
}

/* Poll, deliver and check the story until a signal or the story's end;
 * returns the exit code. ex is NULL without a story. */
static int run_gateway(ocgw *g, ocgw_expect *ex)
{
    int64_t t0 = ocgw_now_ms(), last_check = 0, complete_since = 0, retry_at = 0;
    long check_every = g->cfg.poll_ms * 2 > 300 ? g->cfg.poll_ms * 2 : 300;
    int exit_code = 0;
    while (!g_stop) {
        int64_t now = ocgw_now_ms();
        int busy = 0;
        int cursors_ready = prepare_channels(g, now);
        ocgw_discover_channels(g, now);
        if (g_stop)
            break;
        if (now >= retry_at && handle_next(g, now, cursors_ready, &busy) == 1)
            retry_at = now + g->cfg.poll_ms;
        now = ocgw_now_ms();
        poll_channels(g, now);
        if (ex && !busy && !g->n_queue && !json_is_object(json_object_get(g->st.doc, "inflight")) &&
            now - last_check >= check_every) {
            last_check = now;
            if ((exit_code = story_check(g, ex, now, &complete_since)) >= 0)
                break;
            exit_code = 0;
        }
        /* Busy or not: a story that never settles still ends. */
        if (ex && now - t0 > ex->timeout_ms) {
            exit_code = story_timed_out(g, ex, now - t0);
            break;
        }
        if (!busy)
            ocgw_sleep_ms(g->cfg.poll_ms < 20 ? g->cfg.poll_ms : 20);
    }
    json_t *ev = json_pack("{s:s}", "reason", g_stop ? "signal" : "story finished");
    och_hook_dispatch(g->host, "gateway_stop", ev, NULL, NULL);
    json_decref(ev);
    ocgw_state_save(&g->st);
    print_totals(g);
    return exit_code;
}

/* Everything main set up, in any state it got to. */
static void cleanup(ocgw *g, ocgw_expect *ex, char *sessions)
{
    och_host_free(g->host);        /* plugins shut down first: their threads may still log */
    ocgw_decider_free(g->decider); /* after the plugins: their judge may ask until then */
    g->decider = NULL;
    g->host = NULL;
    g_self = NULL;
    free(sessions);
    for (size_t i = 0; i < g->n_queue; i++)
        ocgw_msg_free(&g->queue[i]);
    free(g->queue);
    for (size_t i = 0; i < g->n_rt; i++)
        free(g->rt[i].id);
    free(g->rt);
    ocgw_state_close(&g->st);
    ocgw_config_free(&g->cfg);
    ocgw_expect_free(ex);
    if (g->transcript && g->transcript != stdout)
        fclose(g->transcript);
}

int main(int argc, char **argv)
{
    ocgw_opts o;
    int exit_code = parse_args(argc, argv, &o);
    if (exit_code >= 0)
        return exit_code;
    ocgw g;
    memset(&g, 0, sizeof g);
    g_self = &g;
    g.stop = &g_stop;
    g.quiet = o.quiet;
    g.verbose = o.verbose;
    g.die_at = getenv("OCGW_DIE_AT");
    ocgw_expect ex;
    memset(&ex, 0, sizeof ex);
    char *sessions = NULL;
    if ((exit_code = load_config(&g, &o, &ex)) == 0) {
        install_signals();
        if ((exit_code = open_host(&g, &sessions)) == 0 &&
            (exit_code = load_plugins(&g, o.check_only)) < 0) {
            start_gateway(&g);
            exit_code = run_gateway(&g, o.expect_path ? &ex : NULL);
        }
    }
    cleanup(&g, &ex, sessions);
    return exit_code;
}
