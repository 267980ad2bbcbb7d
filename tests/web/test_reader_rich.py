"""The reader's richer rendering (issue 18): an agent's markdown rendered safely (marked + DOMPurify; raw HTML and
script links shown as text, never run), edits as diffs, a subagent inside the call that started it titled with
its task, XML notifications in user turns shown as notices (not the person's turns, not in the outline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.signal_process import SignalProcess
from tests.web.generated import TOOL_RESULT, TOOL_USE, message

HOSTILE = "<img src=x onerror=\"document.body.dataset.owned='1'\"><script>document.body.dataset.owned='2'</script>"


def rich_document() -> dict[str, Any]:
    prompt = "Explore the page code and report the module map."
    messages = [
        message("ROLE_USER", "prompt", [{"text": "Please fix the **reader**.", "mediaType": "text/plain"}], 0),
        message("ROLE_AGENT", "response", [
            {"text": "Here is **the plan**:\n\n- one `item`\n- [a link](https://example.org/) and "
                     "[bad](javascript:alert(1))\n\n" + HOSTILE + "\n\n```js\nconst x = 1;\n```",
             "mediaType": "text/plain"},
            {"data": {"type": "tool_use", "id": "toolu_edit", "name": "Edit",
                      "input": {"file_path": "web/src/a.js", "old_string": "const a = 1;\nkeep();\n",
                                "new_string": "const a = 2;\nkeep();\n"}}, "mediaType": TOOL_USE},
            {"data": {"type": "tool_use", "id": "toolu_task", "name": "Task",
                      "input": {"description": "Map the page modules", "prompt": prompt,
                                "subagent_type": "Explore"}}, "mediaType": TOOL_USE}], 1),
        message("ROLE_USER", "tool-result", [
            {"data": {"type": "tool_result", "tool_use_id": "toolu_edit", "content": "edited"},
             "mediaType": TOOL_RESULT},
            {"data": {"type": "tool_result", "tool_use_id": "toolu_task", "content": "the map"},
             "mediaType": TOOL_RESULT}], 2),
        message("ROLE_USER", "prompt", [{"text": "<task-notification>\n<task-id>b1</task-id>\n<status>completed"
                                                 "</status>\n<summary>Background build finished</summary>\n"
                                                 "</task-notification>", "mediaType": "text/plain"}], 3),
        message("ROLE_USER", "prompt", [{"text": "Thanks, now the tests.", "mediaType": "text/plain"}], 4),
    ]
    sub = [message("ROLE_USER", "prompt", [{"text": prompt, "mediaType": "text/plain"}], 0),
           message("ROLE_AGENT", "response", [{"text": "The map: *ui.js*, *session.js*.",
                                               "mediaType": "text/plain"}], 1)]
    return {"format": "p2pd.conversation", "formatVersion": 1, "contextId": "rich", "title": "Rich",
            "origin": {"platform": "claude-code", "sessionId": "rich"}, "counts": {"messages": len(messages)},
            "messages": messages, "subagents": [{"agentId": "a1", "meta": {}, "messages": sub}]}


def test_markdown_diffs_subagents_and_notices(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    path = tmp_path / "rich.a2a.json"
    path.write_text(json.dumps(rich_document()))
    page.goto(server.http + "/")
    page.wait_for_selector("body[data-ready=true]")
    page.set_input_files("#file", str(path))
    page.click("#read-button")
    page.wait_for_selector("[data-reader][data-ready=true]")
    page.click("#expand-all")
    agent = page.locator("#m2 .md").first
    assert agent.locator("strong").inner_text() == "the plan" and agent.locator("li").count() == 2
    assert agent.locator("pre code").inner_text().strip() == "const x = 1;"
    assert agent.locator("a[href='https://example.org/'][rel*=noopener]").count() == 1
    assert agent.locator("a[href^=javascript]").count() == 0
    # raw HTML is text: no element made from it, nothing ran, the words are there to read
    assert agent.locator("img, script").count() == 0
    assert "<img src=x" in agent.inner_text() and page.get_attribute("body", "data-owned") is None
    # the person's prompt is plain text (not markdown)
    assert page.inner_text("#m1 .text") == "Please fix the **reader**."
    # an edit is a diff
    diff = page.locator("#m2 details.tool-call pre.diff")
    assert diff.locator("del").all_inner_texts() == ["-const a = 1;\n"]
    assert diff.locator("ins").all_inner_texts() == ["+const a = 2;\n"]
    assert "Edit of web/src/a.js" in page.inner_text("#m2 details.tool-call >> nth=0")
    # the subagent sits in its Task call, titled with the task, rendered when opened
    sub = page.locator("#m2 details.tool-call >> nth=1 >> details.subagent")
    assert sub.locator("summary").inner_text().endswith("Subagent: Map the page modules (2 messages)")
    assert sub.evaluate("(d) => d.open") is False, "expand all leaves subagents closed"
    sub.locator("summary").click()
    page.wait_for_selector("[data-subagent-message] .md em")
    assert page.locator(".conversation > details.subagent").count() == 0, "no subagent left over at the end"
    # the notification is a notice, not a user turn
    assert page.text_content("#m4 h3") == "#4 Notice"
    assert "Background build finished" in page.inner_text("#m4 summary")
    page.click(".outline summary")
    page.wait_for_selector(".outline-list button")
    assert [int(n or 0) for n in page.locator(".outline-list button").evaluate_all(
        "(bs) => bs.map((b) => b.dataset.jump)")] == [1, 5], "the notice is not in the outline of user turns"
