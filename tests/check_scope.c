/*
 * check_scope.c -- session scope derivation, after buzz-acp's scope.rs
 * tests (shared/reference/session-scope.md, "Its tests, as behaviours").
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "scope.h"
#include "str_map.h"

#define CH "300000000000000001"
#define ROOT_LC "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
#define ROOT_UC "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"
#define OTHER "1111111111111111111111111111111111111111111111111111111111111111"
#define PARENT "2222222222222222222222222222222222222222222222222222222222222222"
#define EV1 "9999999999999999999999999999999999999999999999999999999999999999"
#define EV2 "8888888888888888888888888888888888888888888888888888888888888888"

static const char *const t_root[] = {"e", ROOT_LC, "wss://relay", "root"};
static const char *const t_root_uc[] = {"e", ROOT_UC, "wss://relay", "root"};
static const char *const t_reply_parent[] = {"e", PARENT, "", "reply"};
static const char *const t_reply_root[] = {"e", ROOT_LC, "", "reply"};
static const char *const t_other_root[] = {"e", OTHER, "", "root"};

static dg_scope derive(dg_session_policy pol, int dm, const char *thread, const char *msg,
                       const dg_tag *tags, size_t n)
{
    dg_scope_event ev = {.channel_id = CH,
                         .thread_id = thread,
                         .message_id = msg,
                         .is_dm = dm,
                         .tags = tags,
                         .n_tags = n};
    dg_scope s;
    ck_assert_int_eq(dg_scope_derive(pol, &ev, &s), OC_OK);
    return s;
}

START_TEST(test_dm_is_always_conversation_under_thread_policy)
{
    dg_tag tags[] = {{t_root, 4}, {t_reply_parent, 4}};
    dg_scope s = derive(DG_POLICY_THREAD, 1, NULL, EV1, tags, 2);
    ck_assert_int_eq(s.kind, DG_SCOPE_CONVERSATION);
    ck_assert_str_eq(s.channel_id, CH);
    s = derive(DG_POLICY_THREAD, 1, "310000000000000001", EV1, NULL, 0);
    ck_assert_int_eq(s.kind, DG_SCOPE_CONVERSATION);
    s = derive(DG_POLICY_CHANNEL, 1, NULL, EV1, NULL, 0);
    ck_assert_int_eq(s.kind, DG_SCOPE_CONVERSATION);
}
END_TEST

START_TEST(test_channel_policy_collapses_everything_to_conversation)
{
    dg_tag tags[] = {{t_root, 4}, {t_reply_parent, 4}};
    dg_scope a = derive(DG_POLICY_CHANNEL, 0, NULL, EV1, tags, 2);
    dg_scope b = derive(DG_POLICY_CHANNEL, 0, NULL, EV2, NULL, 0);
    dg_scope c = derive(DG_POLICY_CHANNEL, 0, "310000000000000001", EV2, NULL, 0);
    ck_assert_int_eq(a.kind, DG_SCOPE_CONVERSATION);
    ck_assert(dg_scope_equal(&a, &b));
    ck_assert(dg_scope_equal(&a, &c));
}
END_TEST

START_TEST(test_top_level_event_opens_thread_rooted_at_itself)
{
    dg_scope s = derive(DG_POLICY_THREAD, 0, NULL, EV1, NULL, 0);
    ck_assert_int_eq(s.kind, DG_SCOPE_THREAD);
    ck_assert_str_eq(s.root, EV1);
    ck_assert_str_eq(dg_scope_channel(&s), CH);
    /* Discord ids too (a thread started from a message has its id). */
    s = derive(DG_POLICY_THREAD, 0, NULL, "400000000000000123", NULL, 0);
    ck_assert_str_eq(s.root, "400000000000000123");
}
END_TEST

START_TEST(test_root_only_tag_is_top_level)
{
    dg_tag tags[] = {{t_root, 4}};
    dg_scope s = derive(DG_POLICY_THREAD, 0, NULL, EV1, tags, 1);
    ck_assert_int_eq(s.kind, DG_SCOPE_THREAD);
    ck_assert_str_eq(s.root, EV1); /* its own id, not the root's */
}
END_TEST

START_TEST(test_nested_reply_keys_the_canonical_root_not_the_parent)
{
    dg_tag tags[] = {{t_root, 4}, {t_reply_parent, 4}};
    dg_scope s = derive(DG_POLICY_THREAD, 0, NULL, EV1, tags, 2);
    ck_assert_int_eq(s.kind, DG_SCOPE_THREAD);
    ck_assert_str_eq(s.root, ROOT_LC);
    /* Order of the tags does not matter. */
    dg_tag rev[] = {{t_reply_parent, 4}, {t_root, 4}};
    dg_scope r = derive(DG_POLICY_THREAD, 0, NULL, EV2, rev, 2);
    ck_assert(dg_scope_equal(&s, &r));
}
END_TEST

START_TEST(test_reply_only_makes_the_reply_id_the_root)
{
    dg_tag tags[] = {{t_reply_root, 4}};
    dg_scope s = derive(DG_POLICY_THREAD, 0, NULL, EV1, tags, 1);
    ck_assert_int_eq(s.kind, DG_SCOPE_THREAD);
    ck_assert_str_eq(s.root, ROOT_LC);
}
END_TEST

START_TEST(test_replies_in_one_thread_share_a_scope)
{
    dg_tag direct[] = {{t_reply_root, 4}};
    dg_tag nested[] = {{t_root, 4}, {t_reply_parent, 4}};
    dg_scope a = derive(DG_POLICY_THREAD, 0, NULL, EV1, direct, 1);
    dg_scope b = derive(DG_POLICY_THREAD, 0, NULL, EV2, nested, 2);
    ck_assert(dg_scope_equal(&a, &b));
    char ka[DG_SCOPE_KEY_MAX], kb[DG_SCOPE_KEY_MAX];
    ck_assert_str_eq(dg_scope_key(&a, ka), dg_scope_key(&b, kb));
}
END_TEST

START_TEST(test_two_top_level_events_get_two_scopes)
{
    dg_scope a = derive(DG_POLICY_THREAD, 0, NULL, EV1, NULL, 0);
    dg_scope b = derive(DG_POLICY_THREAD, 0, NULL, EV2, NULL, 0);
    ck_assert(!dg_scope_equal(&a, &b));
    ck_assert_str_eq(dg_scope_channel(&a), dg_scope_channel(&b));
}
END_TEST

START_TEST(test_mixed_case_roots_share_one_scope)
{
    dg_tag lc[] = {{t_root, 4}, {t_reply_parent, 4}};
    dg_tag uc[] = {{t_root_uc, 4}, {t_reply_parent, 4}};
    dg_scope a = derive(DG_POLICY_THREAD, 0, NULL, EV1, lc, 2);
    dg_scope b = derive(DG_POLICY_THREAD, 0, NULL, EV2, uc, 2);
    ck_assert(dg_scope_equal(&a, &b));
    ck_assert_str_eq(b.root, ROOT_LC);
    /* A top-level id in capitals and a reply naming it in lower case. */
    dg_scope top = derive(DG_POLICY_THREAD, 0, NULL, ROOT_UC, NULL, 0);
    dg_tag reply[] = {{t_reply_root, 4}};
    dg_scope rep = derive(DG_POLICY_THREAD, 0, NULL, EV2, reply, 1);
    ck_assert(dg_scope_equal(&top, &rep));
}
END_TEST

START_TEST(test_malformed_tags_fall_back_to_top_level)
{
    static const char *const short_id[] = {"e", "abc123", "", "reply"};
    static const char *const not_hex[] = {
        "e", "zzcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789", "", "reply"};
    static const char *const three[] = {"e", ROOT_LC, "reply"};
    static const char *const marker[] = {"e", ROOT_LC, "", "mention"};
    static const char *const kind[] = {"p", ROOT_LC, "", "reply"};
    static const char *const long_id[] = {"e", ROOT_LC "0", "", "reply"};
    const dg_tag cases[][1] = {{{short_id, 4}}, {{not_hex, 4}}, {{three, 3}},
                               {{marker, 4}},   {{kind, 4}},    {{long_id, 4}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dg_scope s = derive(DG_POLICY_THREAD, 0, NULL, EV1, cases[i], 1);
        ck_assert_msg(s.kind == DG_SCOPE_THREAD && strcmp(s.root, EV1) == 0,
                      "malformed tag case %zu was not treated as top-level", i);
    }
    char root[65];
    ck_assert_int_eq(dg_nip10_root(NULL, 0, root), 0);
}
END_TEST

START_TEST(test_last_valid_tag_of_each_marker_wins)
{
    static const char *const bad_root[] = {"e", "nothex", "", "root"};
    dg_tag tags[] = {{t_other_root, 4}, {t_root, 4}, {bad_root, 4}, {t_reply_parent, 4}};
    char root[65];
    ck_assert_int_eq(dg_nip10_root(tags, 4, root), 1);
    ck_assert_str_eq(root, ROOT_LC); /* the last VALID root, the bad one ignored */
    dg_tag replies[] = {{t_reply_parent, 4}, {t_reply_root, 4}};
    ck_assert_int_eq(dg_nip10_root(replies, 2, root), 1);
    ck_assert_str_eq(root, ROOT_LC);
}
END_TEST

START_TEST(test_discord_thread_is_the_root_under_thread_policy)
{
    dg_scope a = derive(DG_POLICY_THREAD, 0, "310000000000000001", EV1, NULL, 0);
    dg_scope b = derive(DG_POLICY_THREAD, 0, "310000000000000001", EV2, NULL, 0);
    dg_scope c = derive(DG_POLICY_THREAD, 0, "310000000000000002", EV1, NULL, 0);
    ck_assert_int_eq(a.kind, DG_SCOPE_THREAD);
    ck_assert_str_eq(a.root, "310000000000000001");
    ck_assert(dg_scope_equal(&a, &b));
    ck_assert(!dg_scope_equal(&a, &c));
    ck_assert_str_eq(dg_scope_channel(&c), CH);
}
END_TEST

START_TEST(test_session_without_message_or_thread_is_the_channel_session)
{
    dg_scope s = derive(DG_POLICY_THREAD, 0, NULL, NULL, NULL, 0);
    ck_assert_int_eq(s.kind, DG_SCOPE_CONVERSATION);
    s = derive(DG_POLICY_THREAD, 0, "310000000000000009", NULL, NULL, 0);
    ck_assert_int_eq(s.kind, DG_SCOPE_THREAD);
    ck_assert_str_eq(s.root, "310000000000000009");
}
END_TEST

START_TEST(test_labels_and_accessors)
{
    char label[DG_SCOPE_LABEL_MAX];
    dg_scope c = derive(DG_POLICY_CHANNEL, 0, NULL, EV1, NULL, 0);
    ck_assert_str_eq(dg_scope_label(&c, label), "conversation");
    dg_tag tags[] = {{t_root_uc, 4}, {t_reply_parent, 4}};
    dg_scope t = derive(DG_POLICY_THREAD, 0, NULL, EV1, tags, 2);
    ck_assert_str_eq(dg_scope_label(&t, label), "thread:abcdef01");
    ck_assert_str_eq(dg_scope_channel(&t), CH);
    char key[DG_SCOPE_KEY_MAX];
    ck_assert_str_eq(dg_scope_key(&c, key), "conv:" CH);
    ck_assert_str_eq(dg_scope_key(&t, key), "thread:" CH ":" ROOT_LC);
}
END_TEST

START_TEST(test_scope_is_usable_as_a_hash_key)
{
    dg_tag a_tags[] = {{t_root, 4}, {t_reply_parent, 4}};
    dg_tag b_tags[] = {{t_root_uc, 4}, {t_reply_parent, 4}};
    dg_scope scopes[4] = {
        derive(DG_POLICY_THREAD, 0, NULL, EV1, a_tags, 2),
        derive(DG_POLICY_THREAD, 0, NULL, EV2, b_tags, 2), /* same as [0] */
        derive(DG_POLICY_THREAD, 0, NULL, EV2, NULL, 0),
        derive(DG_POLICY_CHANNEL, 0, NULL, EV2, NULL, 0),
    };
    char keys[4][DG_SCOPE_KEY_MAX];
    int values[4] = {1, 2, 3, 4};
    dg_map m;
    dg_map_init(&m);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(dg_map_put(&m, dg_scope_key(&scopes[i], keys[i]), &values[i]), OC_OK);
    ck_assert_uint_eq(m.n, 3);
    ck_assert_ptr_eq(dg_map_get(&m, keys[0]), &values[1]);
    ck_assert_ptr_eq(dg_map_get(&m, keys[2]), &values[2]);
    ck_assert_ptr_eq(dg_map_get(&m, keys[3]), &values[3]);
    dg_map_clear(&m);
    /* Round trip through the key. */
    for (int i = 0; i < 4; i++) {
        dg_scope back;
        ck_assert_int_eq(dg_scope_from_key(keys[i], &back), OC_OK);
        ck_assert(dg_scope_equal(&back, &scopes[i]));
    }
}
END_TEST

static int keep_even(void *val, void *arg)
{
    (void)arg;
    return *(int *)val % 2 == 0;
}

static void count_drop(void *val, void *arg)
{
    (void)val;
    (*(int *)arg)++;
}

START_TEST(test_map_retain_keeps_and_drops)
{
    dg_map m;
    dg_map_init(&m);
    static char keys[200][8];
    static int vals[200];
    for (int i = 0; i < 200; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        vals[i] = i;
        ck_assert_int_eq(dg_map_put(&m, keys[i], &vals[i]), OC_OK);
    }
    int dropped = 0;
    ck_assert_int_eq(dg_map_retain(&m, keep_even, count_drop, &dropped), OC_OK);
    ck_assert_int_eq(dropped, 100);
    ck_assert_uint_eq(m.n, 100);
    for (int i = 0; i < 200; i++)
        ck_assert_ptr_eq(dg_map_get(&m, keys[i]), i % 2 ? NULL : &vals[i]);
    /* Still a working map. */
    ck_assert_int_eq(dg_map_put(&m, keys[1], &vals[1]), OC_OK);
    ck_assert_ptr_eq(dg_map_get(&m, keys[1]), &vals[1]);
    dg_map_clear(&m);
    ck_assert_int_eq(dg_map_retain(&m, keep_even, count_drop, &dropped), OC_OK);
}
END_TEST

START_TEST(test_invalid_input_is_refused)
{
    dg_scope s;
    dg_scope_event none = {.channel_id = NULL};
    ck_assert_int_eq(dg_scope_derive(DG_POLICY_CHANNEL, &none, &s), OC_ERR_INVALID);
    dg_scope_event empty = {.channel_id = ""};
    ck_assert_int_eq(dg_scope_derive(DG_POLICY_THREAD, &empty, &s), OC_ERR_INVALID);
    dg_scope_event colon = {.channel_id = CH, .thread_id = "31:0"};
    ck_assert_int_eq(dg_scope_derive(DG_POLICY_THREAD, &colon, &s), OC_ERR_INVALID);
    char big[200];
    memset(big, '7', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    dg_scope_event longch = {.channel_id = big};
    ck_assert_int_eq(dg_scope_derive(DG_POLICY_CHANNEL, &longch, &s), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key("nope", &s), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key("thread:" CH, &s), OC_ERR_INVALID);
}
END_TEST

START_TEST(test_scope_ids_and_keys_refused)
{
    /* No channel, or a key that names none: refused, the scope left empty. */
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(NULL, &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_conversation("", &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_thread("", "310000000000000001", &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key(NULL, &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key("thread::310000000000000001", &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key("thread:300000000000000001:", &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key("thread:300000000000000001", &sc), OC_ERR_INVALID);
    char key[200] = "thread:";
    memset(key + 7, '3', 150);
    snprintf(key + 157, sizeof key - 157, ":310000000000000001");
    ck_assert_int_eq(dg_scope_from_key(key, &sc), OC_ERR_INVALID);
    ck_assert_int_eq(dg_scope_from_key("conv:300000000000000001", &sc), OC_OK);
    ck_assert_int_eq(sc.kind, DG_SCOPE_CONVERSATION);
}
END_TEST

Suite *make_scope_suite(void)
{
    Suite *s = suite_create("scope");
    TCase *tc = tcase_create("derive");
    tcase_add_test(tc, test_dm_is_always_conversation_under_thread_policy);
    tcase_add_test(tc, test_scope_ids_and_keys_refused);
    tcase_add_test(tc, test_channel_policy_collapses_everything_to_conversation);
    tcase_add_test(tc, test_top_level_event_opens_thread_rooted_at_itself);
    tcase_add_test(tc, test_root_only_tag_is_top_level);
    tcase_add_test(tc, test_nested_reply_keys_the_canonical_root_not_the_parent);
    tcase_add_test(tc, test_reply_only_makes_the_reply_id_the_root);
    tcase_add_test(tc, test_replies_in_one_thread_share_a_scope);
    tcase_add_test(tc, test_two_top_level_events_get_two_scopes);
    tcase_add_test(tc, test_mixed_case_roots_share_one_scope);
    tcase_add_test(tc, test_malformed_tags_fall_back_to_top_level);
    tcase_add_test(tc, test_last_valid_tag_of_each_marker_wins);
    tcase_add_test(tc, test_discord_thread_is_the_root_under_thread_policy);
    tcase_add_test(tc, test_session_without_message_or_thread_is_the_channel_session);
    tcase_add_test(tc, test_labels_and_accessors);
    tcase_add_test(tc, test_scope_is_usable_as_a_hash_key);
    tcase_add_test(tc, test_invalid_input_is_refused);
    tcase_add_test(tc, test_map_retain_keeps_and_drops);
    suite_add_tcase(s, tc);
    return s;
}
