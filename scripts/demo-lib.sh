# The start-up and the record reading that scripts/demo.sh and
# scripts/demo-shared.sh share, sourced by both (". scripts/demo-lib.sh",
# from the top folder). Nothing here runs when sourced but the names of
# the demo's ids and tokens (below).
#
# The caller sets before calling:
#   DEMO_NAME  its name, e.g. demo: the prefix of its error lines and the
#              make target it tells the user to run
#   B          the build folder (ocgw, fake-discord, dirigent.so)
#   RUN        the run folder (from demo_start_fake on)
#
# It offers:
#   demo_check_files      the binaries, demo/host.json, demo/story.json and
#                         curl are there (exits 2 otherwise)
#   demo_start_fake       starts the fake Discord in the background: FAKE is
#                         its pid (the caller stops it: kill $FAKE; wait)
#   demo_wait_fake        waits for the fake's url: sets URL (the REST base)
#                         and BASE (its control API's base); exits 1 if the
#                         fake did not start within 10 s
#   demo_register_users   registers the moderator, the three agents and alice
#                         (the human) at the fake under their tokens
#   demo_plugin_folder    $RUN/plugins/dirigent: manifest and library side by
#                         side, the folder the gateway discovers
#   demo_fetch_record     the fake's record: $RUN/requests.json (every REST
#                         request) and $RUN/messages.json (every message)
#   demo_count_moderator  from the record: mods (messages by the moderator)
#                         and dups (nonces stored twice: a message posted
#                         twice)
#   demo_rest_total       prints how many REST requests the fake recorded

# The ids of demo/host.json, and the bot tokens the fake Discord maps to
# each user.
GUILD=100000000000000001
WORK=300000000000000001
ARCHIVE=300000000000000002 # discussion.archiveChannelId of demo/host.json
MOD=200000000000000001
PLANNER=200000000000000011
REVIEWER=200000000000000012
CODER=200000000000000013
ALICE=200000000000000021
export DIRIGENT_MODERATOR_TOKEN=demo-moderator-token
export DEMO_PLANNER_TOKEN=demo-planner-token
export DEMO_REVIEWER_TOKEN=demo-reviewer-token
export DEMO_CODER_TOKEN=demo-coder-token
export DEMO_ALICE_TOKEN=demo-alice-token

demo_check_files() {
    for f in "$B/ocgw" "$B/fake-discord" "$B/dirigent.so" demo/host.json demo/story.json; do
        [ -e "$f" ] || { echo "$DEMO_NAME: $f is missing; run 'make $DEMO_NAME' from the top folder" >&2; exit 2; }
    done
    # curl registers the demo's users at the fake and reads its record;
    # without it every step after would fail with a misleading "cannot
    # register".
    command -v curl >/dev/null 2>&1 ||
        { echo "$DEMO_NAME: the curl command is missing; install it (apt-get install curl, or make deps as root)" >&2; exit 2; }
}

demo_start_fake() {
    "$B/fake-discord" --guild $GUILD --channel $WORK --channel $ARCHIVE --url-file "$RUN/fake-url" \
        >"$RUN/fake-discord.log" 2>&1 &
    FAKE=$!
}

demo_wait_fake() {
    i=0
    while [ ! -s "$RUN/fake-url" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ -s "$RUN/fake-url" ] || { echo "$DEMO_NAME: the fake Discord did not start (see $RUN/fake-discord.log)" >&2; exit 1; }
    URL=$(cat "$RUN/fake-url")
    BASE=${URL%/api/v10}
}

demo_adduser() { # token user-id bot name
    curl -sf -X POST -H 'Content-Type: application/json' \
        -d "{\"token\":\"$1\",\"userId\":\"$2\",\"bot\":$3,\"username\":\"$4\"}" \
        "$BASE/_fake/users" >/dev/null || { echo "$DEMO_NAME: cannot register $4 at the fake" >&2; exit 1; }
}

demo_register_users() {
    demo_adduser "$DIRIGENT_MODERATOR_TOKEN" $MOD true moderator
    demo_adduser "$DEMO_PLANNER_TOKEN" $PLANNER true planner
    demo_adduser "$DEMO_REVIEWER_TOKEN" $REVIEWER true reviewer
    demo_adduser "$DEMO_CODER_TOKEN" $CODER true coder
    demo_adduser "$DEMO_ALICE_TOKEN" $ALICE false alice
}

demo_plugin_folder() {
    mkdir -p "$RUN/plugins/dirigent"
    cp manifest.json "$RUN/plugins/dirigent/manifest.json"
    ln -s "$(pwd)/$B/dirigent.so" "$RUN/plugins/dirigent/dirigent.so"
}

# A fake that is gone leaves an empty record ([]), which the counts below
# read as no requests and no messages.
demo_fetch_record() {
    curl -sf "$BASE/_fake/requests" >"$RUN/requests.json" || echo '[]' >"$RUN/requests.json"
    curl -sf "$BASE/_fake/messages" >"$RUN/messages.json" || echo '[]' >"$RUN/messages.json"
}

demo_count_moderator() {
    dups=$(grep -o '"nonce": *"[^"]*"' "$RUN/messages.json" | sort | uniq -d | wc -l)
    mods=$(grep -o "\"id\": *\"$MOD\"" "$RUN/messages.json" | wc -l)
}

demo_rest_total() {
    grep -o '"seq": *[0-9]*' "$RUN/requests.json" | wc -l
}
