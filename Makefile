# Dirigent: native turn-manager plugin for OpenClaw-style gateways.
#
#   make              the plugin (build/dirigent.so) and the host core library
#   make check        every Check suite (make check SANITIZE=1: ASan+UBSan build;
#                     make check-sanitize: that, failing on any sanitizer report)
#   make demo         the discussion story through the reference gateway (KEEP=1:
#                     then a playground to type into; VERBOSE=1: internal lines)
#   make demo-shared  the same story on two gateways sharing one PostgreSQL store
#   make bench        benchmarks, printing figures and ratios
#   make fuzz         libFuzzer targets (clang, ASan+UBSan), long run; fuzz-short: CI's
#   make check-faults storage and Discord faults with their figures printed
#   make check-model  the model-based property test, long (MODEL_SEQUENCES, MODEL_SEED)
#   make check-browser  the status page (dirigent-ctl serve) in headless chromium while
#                     the playground runs (make deps-browser installs chromium, as root)
#   make coverage     gcov build (build-cov), make check, line/branch coverage per file
#   make deps         install missing Debian -dev packages (as root); deps-fuzz and
#                     deps-format: the toolchains of make fuzz and make format
#   make format       clang-format every C file (.clang-format); format-check: list
#                     the files that drift from it and fail (CI runs it)
#   make package      build/dirigent-openclaw-<version>-linux-<x64|arm64>.tgz (and this
#                     machine's as build/dirigent-openclaw-<version>.tgz) for `openclaw
#                     plugins install`, from make release (RELEASE_ARCHES=x64: one only)
#   make release      the prebuilt dirigent.so, dirigent-ctl, dirigent-noreply per arch in
#                     build/release/linux-<arch>; make check-release: each decides a turn
#                     (arm64 under qemu-user); make check-install: the x64 package in a
#                     Debian 12 chroot without compiler or -dev packages (root)
#   make install      PREFIX, DESTDIR, PLUGIN_DIR honoured; make uninstall
#
# File layout conventions (the build globs, so adding a file needs no edit here):
#   plugin/*.c hooks/*.c   -> build/dirigent.so (+ templates/*.md embedded); plugin/
#                             also as build/libdgplugin.a, whose members dirigent-ctl
#                             takes (its config, views and cost report, no hook)
#   host/och_*.c           -> build/libochost.a; host/ocgw*.c -> build/ocgw
#   tests/check_*.c        -> one Check suite each, make_<name>_suite(), one runner
#   tests/support/*.c      -> test helpers linked into the runner
#   tests/plugins/*.c      -> fixture plugins build/tests/plugins/<name>.so
#   servers/<name>.c       -> build/<name> (small standalone servers)
#   common/*.c             -> build/libdgcommon.a: what several parts share, written
#                             once (token shape, agent ids, secret scrubbing, UTF-8,
#                             string buffer, key checker, HTTP-server scaffold); each
#                             program takes the members it uses
#   http/*.c               -> build/libdghttp.a, the request core on libcurl that the
#                             chat-platform clients share (handle pool, transfers,
#                             abort switch, back-off); it knows no platform
#   discord/*.c            -> build/libdgdiscord.a, the Discord REST client, linked
#                             by dirigent.so and ocgw
#   judge/*.c              -> build/libdgjudge.a, the chair's judge: its evidence,
#                             answer parsers and OpenAI-compatible client (on http/)
#   slack/*.c              -> build/libdgslack.a, the Slack Web API client (the
#                             moderator app's operations)
#   chat/*.c               -> build/libdgchat.a, the chat platform interface of the
#                             core and its Discord and Slack implementations
#   store/*.c              -> build/libdgstore.a, the store (all SQL: SQLite and
#                             PostgreSQL), linked by dirigent.so and dirigent-ctl

PKGS      := jansson sqlite3 libcurl libmicrohttpd libpq
TEST_PKGS := check
# What make deps installs: the build, the tests (check, curl, PostgreSQL for
# the _pg suites) and nodejs, which writes openclaw.plugin.json for make
# install and make package (the build suite installs into a temporary folder).
DEB_PKGS  := build-essential pkg-config libjansson-dev libsqlite3-dev \
             libcurl4-openssl-dev libmicrohttpd-dev check libsubunit-dev curl \
             libpq-dev postgresql nodejs

CC      ?= cc
# The one place of the version is manifest.json: the .so (DG_VERSION), the
# generated openclaw.plugin.json, the package and its name take it from
# there; tests/check_build.c fails when bridge/openclaw/package.json differs.
VERSION := $(shell sed -n 's/^  "version": "\([^"]*\)",*$$/\1/p' manifest.json)
PREFIX  ?= /usr/local
PLUGIN_DIR ?= $(PREFIX)/lib/openclaw/plugins/dirigent
# Where make install and make package copy koffi from (a node_modules folder
# with koffi and @koromix/koffi-linux-<arch>); none = without koffi.
KOFFI_FROM ?= $(HOME)/.cache/dirigent-openclaw/node_modules
ifeq ($(VERSION),)
$(error manifest.json has no "version" line (the one place of the version))
endif

ifeq ($(COVERAGE),1)
# The coverage build (make coverage): gcov counters, no optimisation.
B := $(or $(BUILD),build-cov)
SANFLAGS := --coverage
CFLAGS := -O0 -g
else ifeq ($(FUZZ),1)
# The fuzz build (make fuzz): clang, libFuzzer's coverage hooks, ASan+UBSan.
B := $(or $(BUILD),build/fuzz)
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
else ifeq ($(SANITIZE),1)
B := $(or $(BUILD),build/san)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifneq ($(RELEASE),)
# The release build (make release, used by make package): one folder per
# target, build/release/linux-<x64|arm64>, optimised, SQLite linked in (and
# jansson and libmicrohttpd too in the programs); see "release build" below.
B := $(or $(BUILD),build)/release/linux-$(RELEASE)
SANFLAGS :=
CFLAGS := -O2 -g
ifeq ($(RELEASE),arm64)
REL_TRIPLET := aarch64-linux-gnu
CC := $(REL_TRIPLET)-gcc
NM := $(REL_TRIPLET)-nm
else ifeq ($(RELEASE),x64)
REL_TRIPLET := x86_64-linux-gnu
else
$(error RELEASE=$(RELEASE): the release build knows x64 and arm64)
endif
else
B := $(or $(BUILD),build)
SANFLAGS :=
endif
NM ?= nm

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)
ifneq ($(RELEASE),)
# Debian's headers are the same for every architecture (multiarch), so the
# host's pkg-config gives the include flags (less the host's own multiarch
# folder: the compiler searches its target's); the libraries are the
# target's, in /usr/lib/<triplet>. What a stock Debian 12 / Ubuntu 22.04
# lacks is linked in from Debian's PIC static archives: SQLite (its
# symbols kept hidden by --exclude-libs), and in the programs jansson and
# libmicrohttpd (which then needs GnuTLS, on every Debian through apt).
# dirigent.so keeps jansson shared: json_t crosses the plugin ABI, so host
# and plugin must use one copy (one hashtable seed, one allocator); the
# package carries libjansson.so.4 next to it (RUNPATH $$ORIGIN). libcurl4
# and libpq5 stay runtime dependencies (static libcurl and libpq would
# drag in OpenSSL, Kerberos, LDAP...). libpq.so.5 is named by soname: the
# arm64 libpq-dev cannot be installed beside the amd64 one.
REL_LIBDIR := /usr/lib/$(REL_TRIPLET)
PKG_CFLAGS := $(filter-out -I/usr/include/x86_64-linux-gnu,$(shell pkg-config --cflags $(PKGS) 2>/dev/null))
CHECK_CFLAGS :=
CHECK_LIBS :=
REL_SHARED := -lcurl -l:libpq.so.5 -lm
PKG_LIBS = -Wl,--exclude-libs,ALL $(REL_LIBDIR)/libsqlite3.a $(REL_LIBDIR)/libjansson.a \
           $(REL_LIBDIR)/libmicrohttpd.a -l:libgnutls.so.30 $(REL_SHARED)
$(B)/dirigent.so: PKG_LIBS = -Wl,--exclude-libs,ALL $(REL_LIBDIR)/libsqlite3.a \
                  -L$(B) -l:libjansson.so.4 $(REL_SHARED) -Wl,-rpath,'$$ORIGIN'
endif

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wno-format-nonliteral
CFLAGS  ?= -O2 -g
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -DDG_VERSION=\"$(VERSION)\" $(WARN) $(CFLAGS) \
             -fPIC -fvisibility=hidden -pthread -I$(B)/gen $(PKG_CFLAGS) $(SANFLAGS)
ALL_CFLAGS = $(PART_INC) $(BASE_CFLAGS)

# ---- the parts ---------------------------------------------------------------
# One line per part: $(call part,<name>,<library>,<what it may include>[,<sources>]).
# The name is the part's folder; the library (none: its objects are linked
# as they are) is built from the folder's *.c, or from <sources> when the
# folder holds more than the library. From these lines come each part's
# include path (its own folder and what it may include, nothing else, so an
# include that points upwards fails the build), its library rule, the
# libraries a program links (in link order: a part's line comes after the
# parts it includes, and every program links the libraries of what it
# includes, transitively), and the folders of the size rule, of the
# platform-name rule and of make coverage. Adding a part is adding its line.
# The flags stamp leaves the include paths out: they are fixed by these
# lines, and a stamp made for one part would be stale for the next.
# include/ is the host ABI, no part: the core, the hooks, the host and the
# tools see it; the parts below the core do not (their status codes are
# common/status.h), so an ABI include there fails the build too.
#   common/ <- http/ <- {discord/, slack/} <- chat/                  (libdgchat.a)
#   {chat/, store/} <- plugin/ (+ include/) <- hooks/                 (dirigent.so)
#   common/ <- http/ <- discord/ <- host/ (+ include/)               (libochost.a, ocgw)
#   common/ <- http/ <- judge/ <- plugin/                            (the chair's judge)
# http/ is the chat-platform clients' shared request core: discord/ and
# slack/ see it, it sees neither. discord/ and store/ sit side by side and
# see nothing of each other. plugin/ and hooks/ see chat/ only, never a
# platform's client (tools/ sees discord/ and slack/: the doctor asks
# Discord and Slack itself). The tests see every part (below).
PARTS :=
define part_def
$(foreach s,$(3),$(if $(filter $(s),$(PARTS) include),,$(error part $(1) may include $(s), which is no part declared above it)))
PARTS += $(1)
PART_$(1)_SEES := $(3)
PART_$(1)_INC := $(foreach d,$(3) $(1),-I$(d))
PART_$(1)_SRC := $(sort $(wildcard $(or $(4),$(1)/*.c)))
PART_$(1)_OBJ := $$(PART_$(1)_SRC:%.c=$(B)/obj/%.o)
PART_$(1)_LIB := $(if $(2),$(B)/$(2))
$(B)/obj/$(1)/%.o: PART_INC = $$(PART_$(1)_INC)
ifneq ($(2),)
$(B)/$(2): $$(PART_$(1)_OBJ)
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^
endif
endef
part = $(eval $(call part_def,$(strip $(1)),$(strip $(2)),$(strip $(3)),$(strip $(4))))

#          name     library         may include
$(call part,common, libdgcommon.a,  )
$(call part,http,   libdghttp.a,    common)
$(call part,discord,libdgdiscord.a, common http)
$(call part,slack,  libdgslack.a,   common http)
$(call part,judge,  libdgjudge.a,   common http)
$(call part,store,  libdgstore.a,   common)
$(call part,chat,   libdgchat.a,    common discord slack)
$(call part,plugin, libdgplugin.a,  include common chat store judge)
$(call part,hooks,  ,               include common chat store judge plugin)
$(call part,host,   libochost.a,    include common http discord slack,host/och_*.c)
$(call part,servers,,               common)
$(call part,tools,  ,               include common chat store judge plugin discord slack)

# The parts a part includes, transitively, itself among them.
part_closure = $(sort $(1) $(foreach p,$(1),$(call part_closure,$(filter-out include,$(PART_$(p)_SEES)))))
# The libraries of the given parts and of all they include, in link order
# (a library before those it uses: the reverse of the lines above).
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
PARTS_TOP_DOWN := $(strip $(call reverse,$(PARTS)))
part_libs = $(foreach p,$(filter $(call part_closure,$(1)),$(PARTS_TOP_DOWN)),$(PART_$(p)_LIB))

# The folders of the size rule (scripts/check-length.sh): every part's, the
# host ABI's and the tests' helpers, benches, fuzz targets and fixture plugins. The suites
# themselves (tests/check_*.c and the fakes' mains beside them) are left
# out: a suite file is one module's tests, each test a story whose length
# is its steps; the build suite holds this list to every folder with C
# files except that one.
LENGTH_DIRS := include $(PARTS) tests/support tests/bench tests/fuzz tests/plugins tests/release
LENGTH_EXEMPT := tests
# The chat-platform clients and their request core; the parts that neither
# are one nor include one themselves must not name them either
# (scripts/check-platform-names.sh): they reach a platform through chat/.
PLATFORM_PARTS := http discord slack
PLATFORM_BLIND := $(strip $(foreach p,$(PARTS),$(if $(filter $(PLATFORM_PARTS),$(p) $(PART_$(p)_SEES)),,$(p))))

# The tests see every part but the tools (tests/check_serve.c adds tools/).
INC_tests := -Iinclude $(addprefix -I,$(filter-out tools,$(PARTS))) -Itests/support
PART_INC = $(INC_tests)
LDFLAGS_ALL = -pthread $(SANFLAGS) $(LDFLAGS)

# dirigent.so: the core and the hooks, linked whole (the entry point is in
# hooks/), and the libraries below them.
PLUGIN_OBJ := $(PART_hooks_OBJ) $(PART_plugin_OBJ) $(B)/obj/gen/templates_embedded.o
$(PART_plugin_LIB): $(B)/obj/gen/templates_embedded.o
PLUGIN_LIBS := $(filter-out $(PART_plugin_LIB),$(call part_libs,hooks))
# host/ holds the host core (libochost.a) and the reference gateway ocgw.
OCGW_SRC   := $(sort $(wildcard host/ocgw*.c))
OCGW_OBJ   := $(OCGW_SRC:%.c=$(B)/obj/%.o)
# The gateway minus its main, linked into the test runner for the unit tests
# of tests/check_ocgw.c (the linker takes only the members a suite uses).
OCGW_LIB_OBJ := $(filter-out $(B)/obj/host/ocgw.o,$(OCGW_OBJ))
# The test runner and the benches link every library.
ALL_LIBS   := $(call part_libs,$(PARTS))
TEST_SRC   := $(sort $(wildcard tests/check_*.c))
TEST_OBJ   := $(TEST_SRC:%.c=$(B)/obj/%.o)
SUPPORT_SRC:= $(sort $(wildcard tests/support/*.c))
SUPPORT_OBJ:= $(SUPPORT_SRC:%.c=$(B)/obj/%.o)
FIXTURE_SRC:= $(sort $(wildcard tests/plugins/*.c))
FIXTURES   := $(FIXTURE_SRC:tests/plugins/%.c=$(B)/tests/plugins/%.so)
SERVERS    := $(PART_servers_SRC:servers/%.c=$(B)/%)
TEMPLATES  := $(sort $(wildcard templates/*.md))
TOOLS_OBJ  := $(PART_tools_OBJ)
BENCH_SRC  := $(sort $(wildcard tests/bench/*.c))
BENCH_OBJ  := $(BENCH_SRC:%.c=$(B)/obj/%.o)

# What make derives from the lines above, for the build suite and scripts.
parts-list:
	@$(foreach p,$(PARTS),echo '$(p) $(or $(notdir $(PART_$(p)_LIB)),-) $(PART_$(p)_INC)';)
length-dirs:
	@echo $(LENGTH_DIRS)
length-exempt:
	@echo $(LENGTH_EXEMPT)
platform-blind:
	@echo $(PLATFORM_BLIND)
check-length:
	sh scripts/check-length.sh $(LENGTH_DIRS)
check-platform-names:
	sh scripts/check-platform-names.sh $(PLATFORM_BLIND)
.PHONY: parts-list length-dirs length-exempt platform-blind check-length check-platform-names

.PHONY: all check check-openclaw compare demo demo-shared playground bench deps install uninstall clean manifest-check \
        fuzz fuzz-short fuzz-ci fuzz-build deps-fuzz check-faults check-model coverage package
OPTIONAL := $(if $(OCGW_SRC),$(B)/ocgw) $(if $(wildcard tests/fake_discord_main.c),$(B)/fake-discord) \
            $(if $(wildcard tests/fake_slack_main.c),$(B)/fake-slack)
all: $(B)/dirigent.so $(PART_host_LIB) $(PART_slack_LIB) $(OPTIONAL) $(SERVERS) $(B)/dirigent-ctl

# ---- generated sources -------------------------------------------------------
# A generated file that depends on a *list* (of suites, benches, templates,
# or the flags of this build) is remade when the list differs from what the
# file holds, not only when a listed file is newer: a removed or renamed
# source would otherwise leave a stale entry (and a broken link), and other
# CFLAGS or SANITIZE=1 in the same BUILD folder would keep objects built
# without them. The comparison reads files at parse time and writes nothing,
# so `make -n` and `make -q` stay exact.
eq = $(and $(findstring x$(strip $(1)),x$(strip $(2))),$(findstring x$(strip $(2)),x$(strip $(1))))
stale_unless = $(if $(call eq,$(1),$(2)),,FORCE)
.PHONY: FORCE
FORCE:

SUITES_SED  := s/^Suite \*\(make_[a-z0-9_]*_suite\)(void).*/X(\1)/p
BENCHES_SED := s/^int \(bench_[a-z0-9_]*\)(void).*/X(\1)/p

$(B)/gen/templates_embedded.c: $(TEMPLATES) scripts/embed-templates.sh \
    $(call stale_unless,$(notdir $(TEMPLATES)),$(shell sed -n 's/^    {"\(.*\)",$$/\1/p' $(B)/gen/templates_embedded.c 2>/dev/null))
	@mkdir -p $(@D)
	sh scripts/embed-templates.sh $(TEMPLATES) > $@.tmp && mv $@.tmp $@

$(B)/gen/suites.inc: $(TEST_SRC) \
    $(call stale_unless,$(if $(TEST_SRC),$(shell sed -n '$(SUITES_SED)' $(TEST_SRC))),$(file <$(B)/gen/suites.inc))
	@mkdir -p $(@D)
	sed -n '$(SUITES_SED)' $(TEST_SRC) > $@.tmp && mv $@.tmp $@

# The flags of this build, kept beside its objects; every object depends on it.
FLAGS_STAMP := $(B)/gen/flags
FLAGS_NOW = $(CC) $(BASE_CFLAGS) $(CHECK_CFLAGS) $(LDFLAGS_ALL)
# Order-only on deps-ok: with make -j no object is compiled before the
# -dev packages are there.
$(FLAGS_STAMP): $(call stale_unless,$(FLAGS_NOW),$(file <$(FLAGS_STAMP))) | deps-ok
	@mkdir -p $(@D)
	@printf '%s\n' '$(subst ','\'',$(FLAGS_NOW))' > $@

# ---- objects -----------------------------------------------------------------
$(B)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) $(OBJ_EXTRA) -MMD -MP -c $< -o $@

# Suites and benches are found by name, not through headers.
$(B)/obj/tests/%.o: OBJ_EXTRA := -Wno-missing-prototypes

$(B)/obj/gen/%.o: PART_INC = $(PART_plugin_INC)

$(B)/obj/gen/templates_embedded.o: $(B)/gen/templates_embedded.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(B)/obj/tests/check_main.o: $(B)/gen/suites.inc

$(B)/gen/benches.inc: $(BENCH_SRC) \
    $(call stale_unless,$(if $(BENCH_SRC),$(shell sed -n '$(BENCHES_SED)' $(BENCH_SRC))),$(file <$(B)/gen/benches.inc))
	@mkdir -p $(@D)
	sed -n '$(BENCHES_SED)' $(BENCH_SRC) > $@.tmp && mv $@.tmp $@

$(B)/obj/tests/bench/bench_main.o: $(B)/gen/benches.inc

# ---- products ----------------------------------------------------------------
$(B)/dirigent.so: $(PLUGIN_OBJ) $(PLUGIN_LIBS)
	$(CC) -shared -o $@ $(PLUGIN_OBJ) $(PLUGIN_LIBS) $(LDFLAGS_ALL) $(PKG_LIBS) -Wl,--no-undefined -Wl,-z,defs
	@ex=$$($(NM) -D --defined-only $@ | awk '{print $$3}' | grep -vE '^(_init|_fini|_edata|_end|__bss_start$(GCOV_EXPORTS))$$' | sort -u | tr '\n' ' '); \
	  [ "$$ex" = "oc_plugin_entry " ] || { echo "dirigent.so exports more than oc_plugin_entry: $$ex"; rm -f $@; exit 1; }

# A program: its objects, then the libraries (LINK_LIBS, set per program).
LINK = $(CC) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(LDFLAGS_ALL) $(PKG_LIBS)

# ocgw's agent bots use the same Discord REST client as the plugin.
$(B)/ocgw: LINK_LIBS = $(call part_libs,host)
$(B)/ocgw: $(OCGW_OBJ) $(call part_libs,host)
	$(LINK) -ldl -lm

# The fake Discord: REST (fake_discord*.c) and its gateway (fake_discord_gateway.c).
FAKE_DISCORD_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(sort $(wildcard tests/support/fake_discord*.c)) \
                    tests/support/ws_server.c tests/support/ws_frame.c tests/support/ws_accept.c)
$(B)/fake-discord: LINK_LIBS = $(PART_common_LIB)
$(B)/fake-discord: $(B)/obj/tests/fake_discord_main.o $(FAKE_DISCORD_OBJ) $(PART_common_LIB)
	$(LINK) -lm

# The fake Slack: Web API (fake_slack*.c) and Socket Mode (fake_slack_socket.c).
FAKE_SLACK_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(sort $(wildcard tests/support/fake_slack*.c)) \
                  tests/support/ws_server.c tests/support/ws_frame.c tests/support/ws_accept.c)
$(B)/fake-slack: LINK_LIBS = $(PART_common_LIB)
$(B)/fake-slack: $(B)/obj/tests/fake_slack_main.o $(FAKE_SLACK_OBJ) $(PART_common_LIB)
	$(LINK) -lm

# The operator's CLI: the plugin's store code over a read-only connection.
# It links the core as a library, so it takes the members it uses (config,
# views, cost report) and none of the hooks.
$(B)/dirigent-ctl: LINK_LIBS = $(call part_libs,tools)
$(B)/dirigent-ctl: $(TOOLS_OBJ) $(call part_libs,tools)
	$(LINK) -lm

# A static pattern: the server objects are then no intermediate files that
# make deletes after a build (and rebuilds on the next `make`).
ifneq ($(SERVERS),)
$(SERVERS): LINK_LIBS = $(call part_libs,servers)
$(SERVERS): $(B)/%: $(B)/obj/servers/%.o $(call part_libs,servers)
	$(LINK) -lm
endif

$(B)/tests/plugins/%.so: tests/plugins/%.c include/openclaw/plugin.h $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $< $(LDFLAGS_ALL) $(PKG_LIBS)

# Plugin objects minus the entry file link straight into the test runner, so
# suites can reach internal (hidden) functions.
# The allocation functions are wrapped (tests/support/failalloc.h) so that
# suites can make one allocation fail and reach the out-of-memory branches.
WRAP_ALLOC := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
$(B)/check_all: LINK_LIBS = $(B)/libocgw.a $(ALL_LIBS)
$(B)/check_all: $(B)/obj/tests/check_main.o $(TEST_OBJ:$(B)/obj/tests/check_main.o=) $(SUPPORT_OBJ) $(PLUGIN_OBJ) $(B)/libocgw.a $(ALL_LIBS)
	$(LINK) $(WRAP_ALLOC) $(CHECK_LIBS) -ldl -lm

# dirigent-ctl serve's code in the test runner too (tests/check_serve.c),
# which sees tools/ for its header.
SERVE_TEST_OBJ := $(filter $(B)/obj/tools/ctl_serve%.o $(B)/obj/tools/ctl_doctor%.o \
                  $(B)/obj/tools/ctl_text.o,$(TOOLS_OBJ))
$(B)/check_all: $(SERVE_TEST_OBJ)
$(B)/obj/tests/check_serve.o: PART_INC = $(INC_tests) -Itools

$(B)/libocgw.a: $(OCGW_LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(B)/bench: LINK_LIBS = $(ALL_LIBS)
$(B)/bench: $(BENCH_OBJ) $(SUPPORT_OBJ) $(PLUGIN_OBJ) $(ALL_LIBS)
	$(LINK) $(CHECK_LIBS) -ldl -lm

TEST_DEPS := $(B)/check_all $(B)/dirigent.so $(PART_host_LIB) $(OPTIONAL) $(SERVERS) $(FIXTURES) \
             $(B)/dirigent-ctl

# CK_FORK stays on (crash capture, per-test timeouts); CHECK_SUITE=<name> runs one.
check: deps-ok $(TEST_DEPS)
	DG_BUILD_DIR=$(B) $(if $(CHECK_SUITE),CK_RUN_SUITE=$(CHECK_SUITE)) ./$(B)/check_all

# Every suite under ASan+UBSan (the SANITIZE=1 build, build/san unless
# BUILD is given), failing on a sanitizer report of any kind, also one of a
# program a suite starts (scripts/check-sanitize.sh names the report files).
# The suites run with make's variables out of their environment, as in
# make coverage: the build suite starts make itself.
check-sanitize: deps-ok
	$(MAKE) SANITIZE=1 test-deps
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL sh scripts/check-sanitize.sh $(or $(BUILD),build/san)
.PHONY: check-sanitize

# Valgrind runs the suites in-process (CK_FORK=no) so leaks are seen; one
# suite per run keeps a failure easy to read. The list is every suite the
# runner has (the make_<name>_suite of tests/check_*.c) minus those below,
# each with why; tests/check_build.c fails when an entry names no suite.
# Valgrind follows only check_all, not the programs a suite starts.
ALL_SUITES := $(if $(TEST_SRC),$(shell sed -n 's/^Suite \*make_\([a-z0-9_]*\)_suite(void).*/\1/p' $(TEST_SRC)))
VALGRIND_SKIP :=
VALGRIND_SKIP += build           # runs make as a subprocess; no product code in this process
VALGRIND_SKIP += docs            # reads markdown links; no product code in this process
VALGRIND_SKIP += cli             # ocgw and fake-discord as subprocesses, unseen by valgrind
VALGRIND_SKIP += noreply         # dirigent-noreply as a subprocess, unseen by valgrind
VALGRIND_SKIP += e2e             # ocgw and fake-discord as subprocesses, unseen by valgrind
VALGRIND_SKIP += shared_gateways # two ocgw as subprocesses, unseen by valgrind
VALGRIND_SKIP += model           # long random sequences; the code they drive runs in turn_hooks and claim
VALGRIND_SKIP += faults          # SIGKILLs its children mid-write, fills a tmpfs; the parent's code is store's and outbox's
VALGRIND_SUITES ?= $(filter-out $(VALGRIND_SKIP),$(ALL_SUITES))
valgrind-list:
	@echo $(VALGRIND_SUITES)
# Every suite runs even after one failed (a run is long); each ends with a
# line "== valgrind: <suite> ok|FAILED <seconds> s", the last line lists the
# failed suites and the target fails if there are any.
valgrind: deps-ok $(TEST_DEPS)
	@failed=; for s in $(VALGRIND_SUITES); do \
	  echo "== valgrind: $$s"; t0=$$(date +%s); \
	  if DG_BUILD_DIR=$(B) CK_FORK=no CK_RUN_SUITE=$$s CK_DEFAULT_TIMEOUT=600 valgrind -q \
	    --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	    --error-exitcode=99 ./$(B)/check_all; then r=ok; else r=FAILED; failed="$$failed $$s"; fi; \
	  echo "== valgrind: $$s $$r $$(( $$(date +%s) - t0 )) s"; \
	done; \
	if [ -n "$$failed" ]; then echo "== valgrind failed:$$failed"; exit 1; fi; \
	echo "== valgrind: every suite clean"
.PHONY: valgrind valgrind-list

# BENCH_QUICK=1: a short pass of every row (CI); fails when a row is
# missing or has no figure, never on an aim.
bench: deps-ok $(B)/bench all
	DG_BUILD_DIR=$(B) BENCH_QUICK=$(BENCH_QUICK) ./$(B)/bench

# VERBOSE=1: the gateway's internal lines too; KEEP=1 (or make playground):
# the fake Discord and the gateway keep running after the story.
# PLATFORM=slack: the same story on a fake Slack (demo/slack.sh; no KEEP).
DEMO_FLAGS = $(if $(filter 1,$(VERBOSE)),--verbose) $(if $(filter 1,$(KEEP)),--keep)
# JUDGE=1 with KEEP=1 / playground: the playground's chair asks a judge (ocgw's scripted one).
export DEMO_JUDGE = $(if $(filter 1,$(JUDGE)),1,0)
demo: deps-ok all
	$(if $(filter slack,$(PLATFORM)),sh demo/slack.sh,sh scripts/demo.sh) $(B) $(DEMO_FLAGS)

playground: deps-ok all
	sh scripts/demo.sh $(B) $(DEMO_FLAGS) --keep

# The same story with its agents on two gateways sharing one throw-away
# PostgreSQL server (scripts/demo-shared.sh).
demo-shared: deps-ok all
	sh scripts/demo-shared.sh $(B) $(if $(filter 1,$(VERBOSE)),--verbose)

check-openclaw: deps-ok all
	sh bridge/openclaw/test/run.sh $(B)

# The status page of dirigent-ctl serve in a real headless browser:
# Debian's chromium driven from node over the DevTools protocol
# (scripts/check-browser.sh, tests/browser/status_page.mjs; no npm).
check-browser: deps-ok all
	sh scripts/check-browser.sh $(B)

deps-browser:
	sh scripts/deps.sh --browser
.PHONY: check-browser deps-browser

# Stories played in a real OpenClaw gateway several ways (alone, with a
# sequential broadcast group, with Dirigent, with Dirigent's judge), same
# scripted model; prints the tables of calls, tokens (the judge's in a row
# of its own), messages, leaks, duplicates, wall time and overlaps, and
# writes them to $(B)/compare.md. Heavy (a gateway run per story, agent
# count and way; an hour or more): it runs niced. CI's short form:
# COMPARE_QUICK=1 make compare (one story, 3 agents, Dirigent only);
# COMPARE_AGENTS, COMPARE_STORIES and DIRIGENT_COMPARE_WAYS select runs
# (bridge/openclaw/test/compare.mjs).
compare: deps-ok all
	DIRIGENT_OPENCLAW_STAGES=compare nice sh bridge/openclaw/test/run.sh $(B)
.PHONY: compare

# OpenClaw's manifest of the bridge, generated from manifest.json (same id,
# configSchema, contracts; needs node). run.sh regenerates it with its own
# Node 24, so this rule is for people installing the bridge by hand.
bridge/openclaw/openclaw.plugin.json: manifest.json bridge/openclaw/gen-plugin-json.mjs
	node bridge/openclaw/gen-plugin-json.mjs manifest.json $@

# ---- coverage -----------------------------------------------------------------
# A gcov build in build-cov runs make check, then scripts/coverage.sh prints
# line and branch coverage per file of plugin/ store/ hooks/ host/ servers/ common/ http/
# discord/ slack/.
# --coverage links libgcov into the .so, which exports its __gcov_* entry
# points and mangle_path (a libgcov helper of GCC 12 with default
# visibility): the export check allows exactly those, in this build only.
GCOV_EXPORTS := $(if $(filter 1,$(COVERAGE)),|__gcov_[A-Za-z0-9_]+|mangle_path)
# The suites run with make's variables out of the environment: the build
# suite starts make itself and must not inherit COVERAGE=1.
coverage: deps-ok
	find build-cov -name '*.gcda' -delete 2>/dev/null || true
	$(MAKE) COVERAGE=1 test-deps
	-env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL DG_BUILD_DIR=build-cov DG_COVERAGE=1 ./build-cov/check_all
	sh scripts/coverage.sh build-cov $(PARTS)

test-deps: deps-ok $(TEST_DEPS)
.PHONY: test-deps

# ---- faults -------------------------------------------------------------------
# The storage and Discord faults with their figures (tests/check_faults.c:
# full disk on a private tmpfs as root, read-only, corrupt pages, kill -9
# while sending, every hostile mode of the fake), then the cases that
# already live in other suites: foreign, newer and in-memory databases
# (store) and the injected store failures, crash between accept
# and mark, 30% failing Discord (outbox).
FAULT_SUITES := faults store outbox
check-faults: deps-ok $(TEST_DEPS)
	@for s in $(FAULT_SUITES); do \
	  DG_BUILD_DIR=$(B) CK_RUN_SUITE=$$s ./$(B)/check_all || exit 1; \
	done

# ---- the model ----------------------------------------------------------------
# tests/check_model.c for longer than make check's short run (150 sequences):
# random host and Discord sequences against the plugin on the hand-moved
# clock, shrunk transcripts of every failing property. MODEL_SEED picks the
# run; MODEL_GATEWAYS=1 keeps to one gateway (the long run also plays two
# on one store); MODEL_KNOWN_FREEZE=1 skips the liveness checks,
# MODEL_KNOWN=<kinds> other properties (both loudly).
MODEL_SEQUENCES ?= 2000
MODEL_SEED ?= 1
MODEL_GATEWAYS ?= 2
check-model: deps-ok $(TEST_DEPS)
	DG_BUILD_DIR=$(B) CK_RUN_SUITE=model MODEL_SEQUENCES=$(MODEL_SEQUENCES) \
	  MODEL_SEED=$(MODEL_SEED) MODEL_GATEWAYS=$(MODEL_GATEWAYS) ./$(B)/check_all

# ---- fuzzing ------------------------------------------------------------------
# libFuzzer targets (tests/fuzz/): one per hook and tool of the real plugin,
# from raw JSON, and one per parser (scope, silent, templates, config,
# paths). Built by clang in build/fuzz with ASan+UBSan; the seeds are
# tests/fuzz/corpus/<target>/ (read only: what a run finds goes to
# build/fuzz/corpus/<target>/). Needs clang and libclang-rt-14-dev
# (scripts/deps.sh --fuzz installs them); nothing else needs them.
# The hooks and tools are those manifest.json declares (contracts.hooks,
# contracts.tools), which tests/check_plugin.c holds equal to what the
# plugin registers; none is left out.
manifest_list = $(shell sed -n '/^    "$(1)": \[/,/^    \]/s/^      "\([^"]*\)",*$$/\1/p' manifest.json)
FUZZ_HOOKS := $(call manifest_list,hooks)
FUZZ_TOOLS := $(call manifest_list,tools)
FUZZ_UNITS := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_plugin.c \
              tests/fuzz/fuzz_host.c tests/fuzz/fuzz_util.c,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_TARGETS := $(FUZZ_HOOKS:%=hook_%) $(subst -,_,$(FUZZ_TOOLS:%=tool_%)) $(FUZZ_UNITS)
FUZZ_SECONDS ?= 600
FUZZ_SHORT_SECONDS ?= 20
FUZZ_CC ?= clang

fuzz-build: deps-ok
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || { echo "make fuzz needs clang and libclang-rt-14-dev: sh scripts/deps.sh --fuzz"; exit 1; }
	$(MAKE) FUZZ=1 CC=$(FUZZ_CC) $(FUZZ_TARGETS:%=build/fuzz/fuzz/%)

fuzz: fuzz-build
	sh scripts/fuzz-run.sh build/fuzz/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-short: fuzz-build
	sh scripts/fuzz-run.sh build/fuzz/fuzz $(FUZZ_SHORT_SECONDS) $(FUZZ_TARGETS)

# CI's run (.ci/run, after make check): every target replays its seeds and
# tries new inputs for FUZZ_CI_SECONDS, two at a time (CI has 2 cores); the
# per-input timeout is looser than by hand, as CI's machine may be loaded.
FUZZ_CI_SECONDS ?= 60
FUZZ_CI_JOBS ?= 2
fuzz-list:
	@echo $(FUZZ_TARGETS)

fuzz-ci: deps-fuzz
	$(MAKE) -j$(FUZZ_CI_JOBS) fuzz-build
	FUZZ_JOBS=$(FUZZ_CI_JOBS) FUZZ_TIMEOUT=30 \
	  sh scripts/fuzz-run.sh build/fuzz/fuzz $(FUZZ_CI_SECONDS) $(FUZZ_TARGETS)

ifeq ($(FUZZ),1)
FUZZ_SUPPORT := $(B)/obj/tests/fuzz/fuzz_util.o
FUZZ_HOST_OBJ := $(B)/obj/tests/fuzz/fuzz_host.o $(FAKE_DISCORD_OBJ)
# The fake Discord runs beside the plugin; its code is no fuzzing target, so
# it gets the sanitizers without libFuzzer's coverage feedback.
$(FAKE_DISCORD_OBJ): SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
                                 -fno-sanitize-recover=undefined
FUZZ_LINK = $(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ -pthread $(PKG_LIBS) -ldl -lm

define fuzz_plugin_target
$(B)/obj/tests/fuzz/$(1).o: tests/fuzz/fuzz_plugin.c $(FLAGS_STAMP)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_CFLAGS) -DFZ_KIND="'$(2)'" -DFZ_NAME='"$(3)"' -MMD -MP -c $$< -o $$@
$(B)/fuzz/$(1): $(B)/obj/tests/fuzz/$(1).o $(FUZZ_HOST_OBJ) $(PLUGIN_OBJ) $(PLUGIN_LIBS)
	@mkdir -p $$(@D)
	$$(FUZZ_LINK)
endef
$(foreach h,$(FUZZ_HOOKS),$(eval $(call fuzz_plugin_target,hook_$(h),h,$(h))))
$(foreach t,$(FUZZ_TOOLS),$(eval $(call fuzz_plugin_target,$(subst -,_,tool_$(t)),t,$(t))))

$(FUZZ_UNITS:%=$(B)/fuzz/%): $(B)/fuzz/%: $(B)/obj/tests/fuzz/fuzz_%.o $(FUZZ_SUPPORT) $(PLUGIN_OBJ) $(PLUGIN_LIBS)
	@mkdir -p $(@D)
	$(FUZZ_LINK)
endif

# ---- dependencies ---------------------------------------------------------------
# make deps installs the Debian packages the build and the tests need, those
# missing only (as root; otherwise it prints the apt-get command and fails).
# The optional toolchains have their own targets: deps-fuzz (clang and
# libFuzzer's runtime, for make fuzz) and deps-format (clang-format, for make
# format and format-check). CI runs all three.
deps:
	@sh scripts/deps.sh $(DEB_PKGS)

deps-fuzz:
	@sh scripts/deps.sh --fuzz

deps-format:
	@sh scripts/deps.sh --format

# Builds start here: when packages of the build are missing, one line names
# them and says that make deps installs them now, then make deps runs (as
# root it installs them; otherwise it prints the command and the build stops).
deps-ok:
	@missing=$$(sh scripts/deps.sh --missing $(DEB_PKGS)); \
	  [ -z "$$missing" ] || { \
	    echo "dirigent: missing Debian packages: $$missing; make deps installs them now"; \
	    $(MAKE) --no-print-directory deps; }
.PHONY: deps deps-ok deps-fuzz deps-format

# ---- formatting -------------------------------------------------------------------
# .clang-format is the style of the code as it is (clang-format 14, Debian
# 12's; make deps-format installs it). make format rewrites every tracked
# .c and .h in place; make format-check lists the files that drift from it
# and fails (CI runs it after make check).
format:
	@sh scripts/format.sh fix

format-check:
	@sh scripts/format.sh check
.PHONY: format format-check

# ---- package and install ---------------------------------------------------------
# The plugin folder OpenClaw loads (bridge, openclaw.plugin.json, dirigent.so,
# dirigent-noreply and its systemd unit, dirigent-ctl, README, LICENSE, koffi) is staged
# once in $(B)/package/dirigent by scripts/package.sh; make package packs it,
# make install copies it.
# make package packs the release build (below) of each of RELEASE_ARCHES:
# $(B)/dirigent-openclaw-<version>-linux-<arch>.tgz, and the one of this
# machine's architecture also as $(B)/dirigent-openclaw-<version>.tgz.
PKG_TGZ := $(B)/dirigent-openclaw-$(VERSION).tgz
PKG_INPUTS := $(B)/dirigent.so $(B)/dirigent-noreply $(B)/dirigent-ctl
package: release
	DIRIGENT_KOFFI_FROM='$(KOFFI_FROM)' sh scripts/package.sh pack $(B) $(VERSION) $(RELEASE_ARCHES)

# ---- release build ----------------------------------------------------------------
# What the package carries, built to load on a stock Debian 12 / Ubuntu
# 22.04 (glibc >= 2.35) without any -dev package: for each of
# RELEASE_ARCHES, $(B)/release/linux-<arch>/ gets dirigent.so,
# libjansson.so.4 (the copy dirigent.so and the bridge share),
# dirigent-ctl and dirigent-noreply; scripts/release-check.sh then refuses
# a library the target cannot be expected to have, an export besides
# oc_plugin_entry, or a glibc symbol newer than the floor. arm64 is cross
# built (sh scripts/deps.sh --release installs the toolchain and the arm64
# libraries). make check-release has each build decide one turn (arm64
# under qemu-user); make check-install installs the x64 package into a
# Debian 12 chroot without compiler or -dev packages and plays one turn
# through the bridge.
RELEASE_ARCHES ?= x64 arm64
RELEASE_FILES := dirigent.so libjansson.so.4 dirigent-ctl dirigent-noreply
release: release-deps
	@for a in $(RELEASE_ARCHES); do $(MAKE) --no-print-directory RELEASE=$$a release-build || exit 1; done

release-deps:
	@sh scripts/deps.sh --release $(RELEASE_ARCHES)

ifneq ($(RELEASE),)
$(B)/libjansson.so.4: $(REL_LIBDIR)/libjansson.so.4
	@mkdir -p $(@D)
	cp -L $< $@
$(B)/dirigent.so: $(B)/libjansson.so.4

$(B)/one-turn-host: tests/release/one_turn_host.c include/openclaw/plugin.h $(B)/libjansson.so.4 $(FLAGS_STAMP)
	$(CC) $(BASE_CFLAGS) -Iinclude -o $@ $< -L$(B) -l:libjansson.so.4 -Wl,-rpath,'$$ORIGIN' $(LDFLAGS_ALL)

release-build: $(addprefix $(B)/,$(RELEASE_FILES))
	sh scripts/release-check.sh $(B) $(RELEASE) $(NM)

release-one-turn: release-build $(B)/one-turn-host
	sh scripts/release-one-turn.sh $(B) $(RELEASE)
endif

check-release: release-deps
	@for a in $(RELEASE_ARCHES); do $(MAKE) --no-print-directory RELEASE=$$a release-one-turn || exit 1; done

check-install:
	$(MAKE) --no-print-directory RELEASE_ARCHES=x64 package
	sh scripts/check-install.sh $(B) $(VERSION)

# The README's quick start (make demo, make check, then make demo
# PLATFORM=slack) from a clean clone of FRESH_REF (default HEAD: commit
# first) in a fresh copy of a Debian 12 root with only make and a compiler
# (scripts/check-fresh.sh; root, debootstrap once, Debian's archive).
FRESH_REF ?= HEAD
check-fresh:
	@sh scripts/deps.sh --fresh
	sh scripts/check-fresh.sh $(FRESH_REF)
.PHONY: check-fresh
.PHONY: release release-deps release-build release-one-turn check-release check-install

PC_DIR      := $(PREFIX)/lib/pkgconfig
UNIT_DIR    := $(PREFIX)/lib/systemd/user
INSTALL_BIN := $(SERVERS) $(if $(OCGW_SRC),$(B)/ocgw) $(B)/dirigent-ctl
install: $(PKG_INPUTS) $(INSTALL_BIN)
	DIRIGENT_KOFFI_FROM='$(KOFFI_FROM)' sh scripts/package.sh stage $(B) $(VERSION)
	install -d $(DESTDIR)$(PLUGIN_DIR) $(DESTDIR)$(PREFIX)/include/openclaw \
	  $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PC_DIR) $(DESTDIR)$(UNIT_DIR)
	@# The complete OpenClaw plugin folder, plus manifest.json and the templates
	@# for hosts that read the ABI manifest (ocgw).
	cp -R $(B)/package/dirigent/. $(DESTDIR)$(PLUGIN_DIR)/
	install -m 0644 manifest.json $(DESTDIR)$(PLUGIN_DIR)/manifest.json
	install -d $(DESTDIR)$(PLUGIN_DIR)/templates
	install -m 0644 $(TEMPLATES) $(DESTDIR)$(PLUGIN_DIR)/templates/
	@[ -d $(DESTDIR)$(PLUGIN_DIR)/node_modules/koffi ] || echo "note: installed without koffi (KOFFI_FROM=$(KOFFI_FROM)); run 'npm install --omit=dev' in $(PLUGIN_DIR) before OpenClaw loads it"
	@# The ABI header and its pkg-config file, for authors of other native plugins.
	install -m 0644 include/openclaw/plugin.h $(DESTDIR)$(PREFIX)/include/openclaw/plugin.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' scripts/openclaw-plugin.pc.in \
	  > $(DESTDIR)$(PC_DIR)/openclaw-plugin.pc
	@# The programs: the reference gateway and the servers (dirigent-noreply),
	@# and dirigent-noreply's systemd user unit pointing at this bin folder.
	install -m 0755 $(INSTALL_BIN) $(DESTDIR)$(PREFIX)/bin/
	sed 's|%h/.openclaw/extensions/dirigent/dirigent-noreply|$(PREFIX)/bin/dirigent-noreply|' \
	  servers/dirigent-noreply.service > $(DESTDIR)$(UNIT_DIR)/dirigent-noreply.service

# Removes every file install wrote, and the folders only it uses when empty.
uninstall:
	rm -rf $(DESTDIR)$(PLUGIN_DIR)
	rm -f $(DESTDIR)$(PREFIX)/include/openclaw/plugin.h $(DESTDIR)$(PC_DIR)/openclaw-plugin.pc \
	  $(DESTDIR)$(UNIT_DIR)/dirigent-noreply.service \
	  $(foreach p,$(INSTALL_BIN),$(DESTDIR)$(PREFIX)/bin/$(notdir $(p)))
	rmdir $(DESTDIR)$(PREFIX)/include/openclaw $(DESTDIR)$(PREFIX)/lib/openclaw/plugins \
	  $(DESTDIR)$(PREFIX)/lib/openclaw 2>/dev/null || true

clean:
	rm -rf build build-cov

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
