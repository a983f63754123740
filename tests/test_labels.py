"""Policies are reported by ``@id`` where they have one; ids stay positional (#9, finding 8)."""

from __future__ import annotations

import json

import cedarlite
from cedarlite.cli import main

TEXT = """@id("read-own")
permit (principal, action, resource);
@id("no-secrets")
forbid (principal, action, resource) when { resource.secret };
forbid (principal, action, resource) when { resource.nope };
@id("twice")
forbid (principal, action, resource) when { false };
@id("twice")
forbid (principal, action, resource) when { false };
"""


def test_ids_stay_positional_and_labels_use_the_id_annotation() -> None:
    ps = cedarlite.PolicySet.from_str(TEXT)
    assert [p.id for p in ps] == [f"policy{i}" for i in range(5)]
    assert [ps.label(p.id) for p in ps] == [
        "read-own",
        "no-secrets",
        "policy2",
        "twice (policy3)",
        "twice (policy4)",
    ]
    assert ps.label("unknown") == "unknown"
    resp = cedarlite.is_authorized(
        {"principal": 'U::"a"', "action": 'Action::"r"', "resource": 'D::"x"'}, ps
    )
    assert resp.reasons == ("policy0",)  # the API answers with ids, as cedarpy does


def test_validator_messages_name_the_id_annotation() -> None:
    schema = "entity D = { secret: Bool };\naction r appliesTo { principal: D, resource: D };"
    policies = cedarlite.PolicySet.from_str(
        '@id("typo")\nforbid (principal, action, resource) when { resource.secrt };', "p.cedar"
    )
    (issue,) = cedarlite.validate(policies, schema).errors
    assert issue.policy_id == "policy0" and issue.label == "typo"
    assert str(issue).startswith("p.cedar:2:45: error[unknown-attribute]: policy `typo`: ")


def test_the_cli_reports_reasons_and_errors_by_id_annotation(tmp_path, capsys) -> None:
    (tmp_path / "p.cedar").write_text(TEXT)
    argv = ["authorize", "-p", str(tmp_path / "p.cedar"), "-l", 'U::"a"', "-a", 'Action::"r"']
    assert main([*argv, "-r", 'D::"x"', "-v"]) == 0
    out = capsys.readouterr().out
    assert "error while evaluating policy `no-secrets`: " in out
    assert "error while evaluating policy `policy2`: " in out
    assert out.rstrip().endswith("following policies:\n  read-own")
    assert main([*argv, "-r", 'D::"x"', "--json"]) == 0
    diagnostics = json.loads(capsys.readouterr().out)["diagnostics"]
    assert diagnostics["reason"] == ["read-own"]
    assert [e["policyId"] for e in diagnostics["errors"]] == ["no-secrets", "policy2"]


def test_removal_labels_name_the_configuration_that_decided() -> None:
    from cedarlite.tools import explain, resolve_tools

    config = {
        "tools": {
            "deny": ["cron"],
            "byProvider": {"openai/gpt-5": {"deny": ["browser"]}},
            "subagents": {"tools": {"deny": ["read"]}},
        },
        "agents": {"list": [{"id": "coder", "tools": {"deny": ["canvas"]}}]},
    }
    tools = [{"name": n} for n in ("read", "cron", "browser", "canvas", "gateway", "exec")]
    context = {"agentId": "coder", "provider": "openai", "model": "gpt-5", "senderIsOwner": True}
    res = resolve_tools(config, tools, {**context, "subagentDepth": 1})
    assert res.removed == {
        "read": "tools.subagents.tools.deny",
        "cron": "tools.deny",
        "browser": 'tools.byProvider["openai/gpt-5"].deny',
        "canvas": "agents.coder.tools.deny",
        "gateway": "tools.subagents.tools.deny (default)",
    }
    text = str(explain(config, "cron", context, tools))
    assert text.startswith("cron: removed by tools.deny\n")
    assert "  tools.allow: removed by tools.deny; deny entry `cron` matches\n" in text
    assert "allowed by" not in text
