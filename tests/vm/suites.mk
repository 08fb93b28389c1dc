# Included by the Makefiles that install guest test suites: the suite
# numbers come from tests/vm/suites.list, never from the Makefiles.
SUITES_LIST := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))suites.list)
# where suites are installed, under DESTDIR
SUITES_DIR = /usr/lib/iou-offload/tests
# $(call suite_dir,NAME): NN-NAME (an error if NAME is not registered)
suite_dir = $(or $(shell awk '$$2 == "$(1)" && $$1 ~ /^[0-9][0-9]$$/ { print $$1 "-" $$2 }' $(SUITES_LIST)),$(error suite $(1) is not in $(SUITES_LIST)))
# $(call suite_clean,ROOT,NAME): shell command removing NAME installed under
# ROOT with any number (a payload keeps what an older tree installed)
suite_clean = rm -rf $(1)/[0-9][0-9]-$(2)
