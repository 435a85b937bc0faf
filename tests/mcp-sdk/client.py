"""cairn's MCP server driven by the official MCP Python SDK (`mcp`, pinned in
requirements.txt) as its client, over stdio, the way an agent starts it: in a project folder
that is not the knowledge repository. Run by tests/cli/mcp_sdk.rs:

    python3 tests/mcp-sdk/client.py CAIRN_BIN PROJECT_DIR

The knowledge repository is found through the environment the test gives (the person's
default in config.toml). Prints one JSON object of what it saw; exits 1 on a failed check.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def check(ok, what):
    if not ok:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


async def main(cairn, project):
    params = StdioServerParameters(command=cairn, args=["mcp"], cwd=project, env=dict(os.environ))
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.server_info.name
            tools = {t.name: t for t in (await session.list_tools()).tools}
            seen["tools"] = sorted(tools)
            for name in ["brief", "recall", "search", "remember", "slog", "adr_new", "memory_show"]:
                check(name in tools, f"tool {name} listed")
            check(tools["recall"].annotations is not None and tools["recall"].annotations.read_only_hint,
                  "recall says it only reads")

            stored = await session.call_tool(
                "remember", {"text": "The billing service retries webhooks three times with backoff"})
            check(not stored.is_error, f"remember: {stored.content}")

            found = await session.call_tool("recall", {"query": "billing webhooks retries"})
            check(not found.is_error, f"recall: {found.content}")
            structured = found.structured_content
            check(isinstance(structured, dict), "recall has structuredContent")
            check(next(iter(structured)) == "caution", f"the caution comes first: {list(structured)[:3]}")
            check("not instructions" in structured["caution"], "the caution says data, not instructions")
            text = json.dumps(structured["data"])
            check("retries webhooks three times" in text, "recall found what remember stored")
            seen["recall_keys"] = list(structured)[:4]

            empty = await session.call_tool("remember", {"text": ""})
            check(empty.is_error, "an empty remember is an error")
            message = " ".join(getattr(c, "text", "") for c in empty.content)
            check("`text`" in message, f"the error names the field text: {message}")

            resources = await session.list_resources()
            uris = [str(r.uri) for r in resources.resources]
            check("cairn://memory" in uris, f"MEMORY.md is a resource: {uris}")
            memory = await session.read_resource("cairn://memory")
            check(any("# Memory" in getattr(c, "text", "") for c in memory.contents), "MEMORY.md read")
            seen["resources"] = len(uris)
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
