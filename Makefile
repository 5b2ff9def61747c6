# make demo: a bare Debian 12 machine (as root) → a finished demo matrix on a loop-file device.
# make test: lint, unit tests, the end-to-end matrix on a loop device with MariaDB + sysbench,
# and every Molecule scenario in podman containers.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := .make
PLAYBOOK := $(BIN)/ansible-playbook

.PHONY: demo test test-long lint unit e2e bench venv root clean

$(STAMP)/os: | $(STAMP)
	@command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null || { \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv; }
	@command -v git >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git
	touch $@

# Every Debian package a test uses, installed before pytest collects anything: the report test
# opens report.html in a real browser, the SMART tests run smartctl, the my.cnf tests ask the
# installed mariadbd what it knows; the remote-host tests reach their hosts with ssh; the bcache
# refusal test gets past the tools to this kernel, which has no bcache. Under `make test` a skipped
# test fails (tests/conftest.py).
TEST_PACKAGES := chromium smartmontools mariadb-server mariadb-client sysbench sysstat xfsprogs git openssh-client \
  bcache-tools
$(STAMP)/test-os: $(STAMP)/os Makefile
	[ "$$(dpkg-query -W -f='$${db:Status-Status}\n' $(TEST_PACKAGES) 2>/dev/null | grep -cx installed)" = \
	  "$(words $(TEST_PACKAGES))" ] || { apt-get update && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(TEST_PACKAGES); }
	touch $@

# The venv builds mysqlclient, the driver the host code talks to the server through (localhost
# runs the modules with the venv's Python): PyPI has no Linux wheel of it, so a compiler, pkg-config
# and the MariaDB client library's headers, checked each time the venv is made.
BUILD_PACKAGES := gcc pkg-config libmariadb-dev python3-dev
$(STAMP)/venv: requirements.txt pyproject.toml $(STAMP)/os
	[ "$$(dpkg-query -W -f='$${db:Status-Status}\n' $(BUILD_PACKAGES) 2>/dev/null | grep -cx installed)" = \
	  "$(words $(BUILD_PACKAGES))" ] || { apt-get update && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(BUILD_PACKAGES); }
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt -e .
	touch $@

$(STAMP):
	mkdir -p $@

venv: $(STAMP)/venv

root:
	@[ "$$(id -u)" = 0 ] || { echo "this target formats a loop device and installs packages: run it as root" >&2; exit 1; }

demo: root venv
	$(PLAYBOOK) matrix.yml -e @inventory/demo.yml
	$(PLAYBOOK) matrix.yml -e @inventory/demo.yml -e @inventory/demo-verdict.yml
	$(PLAYBOOK) matrix.yml -e @inventory/demo.yml -e @inventory/demo-auto.yml

lint: venv
	$(BIN)/ansible-lint --profile production --offline
	$(BIN)/python -m pyflakes analysis host bench filter_plugins action_plugins tests

unit: venv
	$(BIN)/pytest -q tests/unit

e2e: root venv
	$(BIN)/pytest -q -x tests/e2e

# molecule-os too: the remote-host e2e tests (tests/e2e/remote_hosts.py) run podman containers
# of tests/molecule/image.sh's image, which they build themselves (debootstrap); and vm-os: the
# VM host tests (tests/e2e/vm_host.py) boot QEMU guests of tests/vm/image.sh's image.
# --durations: CI's budget is 90 minutes; the slowest tests, in its log, say where it goes. The
# unit tests on two workers (they only compute); the end-to-end tests and Molecule in two lanes
# (tests/e2e/lanes.sh: localhost, the podman fleet and Molecule in one; the VM guest, MySQL 9.7
# and the container hosts' checks in the other), each one test at a time, then the known answers
# that need a quiet machine: the verdicts' beside seed 000's OLTP cache, then the reduced matrix
# alone. -m "not long": the tests marked long (pyproject.toml) are left out, whole; `make
# test-long` runs them, with the same set-up.
test: root lint $(STAMP)/test-os $(STAMP)/molecule-os $(STAMP)/vm-os
	INNOMATRIX_NO_SKIPS=1 $(BIN)/pytest -q -n 2 tests/unit
	tests/e2e/lanes.sh "$(MAKE) --no-print-directory"

test-long: root lint $(STAMP)/test-os $(STAMP)/molecule-os $(STAMP)/vm-os
	INNOMATRIX_NO_SKIPS=1 $(BIN)/pytest -q --durations=25 -m long tests/e2e

bench: root venv
	$(BIN)/python bench/figures.py

# make molecule: each role's Molecule scenario and the whole matrix once, in podman containers
# of Debian 12 and 13 images built here (tests/molecule/image.sh: rebuilt only when the script or the
# host's mirror changes). Scenarios run MOLECULE_JOBS at a time; logs and the seconds each took
# go to .make/molecule/.
.PHONY: molecule
MOLECULE_JOBS ?= 2

$(STAMP)/molecule-os: | $(STAMP)
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null \
	  && [ -x /usr/libexec/podman/catatonit ] || { apt-get update && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y --no-install-recommends podman runc catatonit debootstrap; }
	touch $@

$(STAMP)/vm-os: | $(STAMP)
	@command -v qemu-system-x86_64 >/dev/null && command -v qemu-img >/dev/null && command -v debootstrap >/dev/null \
	  || { apt-get update && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y --no-install-recommends qemu-system-x86 qemu-utils debootstrap; }
	touch $@

molecule: root venv $(STAMP)/molecule-os
	tests/molecule/image.sh
	PATH="$(CURDIR)/$(BIN):$$PATH" MOLECULE_JOBS=$(MOLECULE_JOBS) MOLECULE_LOGS=$(CURDIR)/$(STAMP)/molecule \
	  tests/molecule/run.sh

clean:
	rm -rf $(VENV) $(STAMP)
