"""Everything innomatrix runs on the benchmark host, under one rule: the standard library only.

Ansible ships this package to the host as module_utils (ansible.cfg: `module_utils = host`), where
the modules in host/modules import it as `ansible.module_utils.innomatrix_host`; the controller's
package (analysis/innomatrix) imports the same files as `innomatrix_host`, so each rule — how a
driver's output is read, which intervals are measured, when a trial has settled — exists once.
Within the package, modules import each other relatively (`from .numbers import count`), which
both names resolve. tests/unit/test_host_package.py holds the rule.
"""
