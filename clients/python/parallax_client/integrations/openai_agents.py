"""The OpenAI Agents SDK: tool guardrails that ask Parallax.

    from agents import Agent, function_tool
    from parallax_client.integrations.openai_agents import input_guardrail, output_guardrail

    @function_tool(tool_input_guardrails=[input_guardrail(fw)],
                   tool_output_guardrails=[output_guardrail(fw)])
    def send_invoice(customer: str, amount: int) -> str: ...

The input guardrail checks each call (``tool.before``, the tool's name and
its JSON arguments) and waits out an approval. A denial rejects the call:
the model gets "Parallax denied ..." with the reason instead of a result
(or, with ``on_deny="raise"``, the run stops with the SDK's
``ToolInputGuardrailTripwireTriggered``). The SDK cannot change a call's
arguments from a guardrail, so a verdict that would rewrite them rejects
the call too, naming the arguments the policies allow. The output guardrail
checks the result (``tool.after``): a redaction replaces what the model
sees with the redacted result, a block withholds it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from agents import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from ..decision import Kind
from ..errors import Denied
from ..firewall import Firewall

OnDeny = Literal["reject", "raise"]


def _info(e: Denied) -> dict[str, Any]:
    return {"reason": e.reason, "rule_ids": e.rule_ids}


def _refuse(message: str, info: dict[str, Any], on_deny: OnDeny) -> ToolGuardrailFunctionOutput:
    if on_deny == "raise":
        return ToolGuardrailFunctionOutput.raise_exception(output_info={**info, "message": message})
    return ToolGuardrailFunctionOutput.reject_content(message, output_info=info)


def input_guardrail(firewall: Firewall, *, on_deny: OnDeny = "reject") -> ToolInputGuardrail[Any]:
    """A ``ToolInputGuardrail`` checking each call of the tools it is given to."""

    async def parallax_tool_input(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        try:
            args = json.loads(ctx.tool_arguments or "{}")
        except json.JSONDecodeError:
            args = {"arguments": ctx.tool_arguments}
        if not isinstance(args, dict):
            args = {"arguments": args}
        try:
            allowed = await firewall.aenforce(ctx.tool_name, args)
        except Denied as e:
            return _refuse(f"Parallax denied {ctx.tool_name}: {e.reason}", _info(e), on_deny)
        if allowed != args:
            message = (
                f"Parallax allows {ctx.tool_name} only with these arguments: "
                f"{json.dumps(allowed, ensure_ascii=False, default=repr)}; call it again with them"
            )
            return _refuse(message, {"rewritten_args": allowed}, on_deny)
        return ToolGuardrailFunctionOutput.allow(output_info={"tool": ctx.tool_name})

    return ToolInputGuardrail(guardrail_function=parallax_tool_input, name="parallax")


def output_guardrail(firewall: Firewall, *, on_deny: OnDeny = "reject") -> ToolOutputGuardrail[Any]:
    """A ``ToolOutputGuardrail`` checking each result before the model sees it."""

    async def parallax_tool_output(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        decision = await firewall.aio.check_result(
            ctx.tool_name, data.output, session_id=firewall.session_id
        )
        if decision.kind is Kind.DENY:
            e = Denied.from_decision(decision, tool_name=ctx.tool_name)
            return _refuse(f"Parallax withheld the result of {ctx.tool_name}: {e.reason}", _info(e), on_deny)
        rewritten = decision.rewritten_event
        if decision.kind is Kind.REWRITE and rewritten and "tool_result" in rewritten:
            result = rewritten["tool_result"]
            text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            return ToolGuardrailFunctionOutput.reject_content(
                text, output_info={"redacted": True, "rule_ids": decision.rule_ids}
            )
        return ToolGuardrailFunctionOutput.allow(output_info={"tool": ctx.tool_name})

    return ToolOutputGuardrail(guardrail_function=parallax_tool_output, name="parallax_output")
