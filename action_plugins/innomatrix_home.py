"""Bring one finished results directory home in one task: pack it on the host (the
innomatrix_pack module, with the task's become), fetch the archive over the connection as the login
user, check its SHA-256 and publish it in the controller's tree, then drop the host's archive.

One Python start on the host per directory, where a pack task, a fetch (whose remote stat is a
module run of its own) and a file task made three: over SSH each costs the host a Python start
(about five seconds under the VM tests' TCG, a tenth of a second or more on a small real host, for
every cell of a matrix). The fetch is the connection's own file transfer, as the login user, never
through become (fetch through become reads the whole archive into memory and sends it as base64);
the drop is one shell command, also as the login user, who owns the archive."""

from __future__ import annotations

import shlex
from pathlib import Path

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase
from innomatrix_host.runtime import TrialError, unpack

ARGS = ("stage_dir", "run_dir", "path", "outbox", "owner")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        args = {name: self._task.args.get(name) for name in ARGS}
        for name in ("stage_dir", "run_dir", "path", "outbox"):
            if not isinstance(args[name], str) or not args[name]:
                raise AnsibleActionFail(f"innomatrix_home: {name} must be a non-empty string")
        if self._task.check_mode:
            return {**result, "changed": False, "msg": "would bring home " + args["path"]}

        packed = self._execute_module(module_name="innomatrix_pack", task_vars=task_vars, module_args={
            "root": args["stage_dir"], "path": args["path"], "outbox": args["outbox"], "owner": args["owner"] or ""})
        if packed.get("failed") or packed.get("unreachable"):
            return {**result, **packed}

        archive = packed["archive"]
        incoming = Path(args["run_dir"]) / ".incoming" / task_vars["inventory_hostname"]
        incoming.mkdir(parents=True, exist_ok=True)
        fetched = incoming / Path(archive).name
        try:
            self._connection.fetch_file(archive, str(fetched))
        except AnsibleConnectionFailure:
            raise  # the host is gone: Ansible names it unreachable
        except AnsibleError as exc:
            raise AnsibleActionFail(f"cannot fetch {archive}: {exc}") from None
        try:
            kept = unpack(fetched, packed["sha256"], Path(args["run_dir"]), args["path"])
        except (TrialError, OSError) as exc:
            raise AnsibleActionFail(f"cannot publish {args['path']}: {exc}") from None

        dropped = self._low_level_execute_command("rm -f -- " + shlex.quote(archive), sudoable=False)
        if dropped["rc"] != 0:
            raise AnsibleActionFail(f"published {args['path']}, but the host's archive {archive} was not dropped: "
                                    f"{dropped['stderr'].strip() or dropped['rc']}")
        return {**result, "changed": True, "path": str(Path(args["run_dir"]) / args["path"]),
                "kept_aside": kept, "bytes": packed["bytes"]}
