"""What a model reads from `ragnb serve`'s tools, in tokens: the text of each tool result (MCP `content`), which a
client hands its model, against the MCP SDK's own text for the same answer (its JSON, indented), that JSON without
the spaces, the chunks' texts alone, and LangChain's `create_retriever_tool` over the same chunks (their texts joined,
no citations). Asked through the real MCP server (in memory), on a store of the bundled docs built as the README's
first command builds it, or on `--store`. Prints one table of mean tokens per call, then the tokens of the tools'
definitions, which a client sends its model with every turn.

Tokens are counted by a real LLM tokenizer: the one Anthropic's Python SDK shipped for its earlier Claude models
(`anthropic` 0.25.0's `tokenizer.json`, fetched once from PyPI into `bench/out/`), or `--tokenizer FILE` (any
`tokenizer.json`).

    python bench/bench_tool_tokens.py [--store DIR] [--questions FILE] [--n 20] [--tokenizer FILE]
"""
import argparse, json, subprocess, sys, tempfile, zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / 'bench' / 'out'
SDK_WITH_TOKENIZER = 'anthropic==0.25.0'


def claude_tokenizer() -> Path:
    "`bench/out/claude-tokenizer.json`, taken from the wheel that shipped it the first time."
    path = OUT / 'claude-tokenizer.json'
    if not path.exists():
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, '-m', 'pip', 'download', SDK_WITH_TOKENIZER, '--no-deps', '-q', '-d', d],
                           check=True)
            with zipfile.ZipFile(next(Path(d).glob('*.whl'))) as z: data = z.read('anthropic/tokenizer.json')
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path


def bundled_store() -> Path:
    "A store of the bundled docs, with the model `ragnb index` picks for them."
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import default_corpus, index_paths, new_store_model
    path = Path(tempfile.mkdtemp()) / 'store'
    model = new_store_model(default_corpus())[0]
    with Store.open(path, embedder=Embedder.from_pretrained(model) if model else None) as w:
        index_paths(w, default_corpus(), progress=False)
    return path


async def tool_calls(service, questions):
    "Per question, the `ask` results (untrimmed, trimmed) and a `read` of the first hit, as the MCP client gets them."
    from mcp.client.client import Client
    from ragnb.serve import build_mcp_server
    out = []
    async with Client(build_mcp_server(service)) as c:
        for q in questions:
            plain = await c.call_tool('ask', {'question': q, 'k': 5})
            trimmed = await c.call_tool('ask', {'question': q, 'k': 5, 'trim': True})
            top = plain.structured_content['chunks'][0]
            read = await c.call_tool('read', {'cite': top.get('read', top['cite'])})
            out.append((q, plain, trimmed, read))
    return out


def main():
    import anyio, pydantic_core
    from tokenizers import Tokenizer
    from langchain_core.tools import create_retriever_tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from ragnb.index import Store
    from ragnb.langchain import RagnbRetriever
    from ragnb.retrieve import RetrieveOpts
    from ragnb.serve import RetrievalService, build_mcp_server
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--store', help='a store built by `ragnb index` (default: one of the bundled docs, built now)')
    ap.add_argument('--questions', default=str(ROOT / 'data' / 'eval' / 'questions.jsonl'),
                    help='JSON Lines with a `question` each')
    ap.add_argument('--n', type=int, default=20, help='how many of its questions')
    ap.add_argument('--tokenizer', help='a tokenizer.json to count with (default: the Claude tokenizer, see above)')
    args = ap.parse_args()
    tok = Tokenizer.from_file(args.tokenizer or str(claude_tokenizer()))
    n = lambda s: len(tok.encode(s).ids)
    questions = [json.loads(x)['question'] for x in Path(args.questions).read_text().splitlines() if x.strip()]
    questions = questions[:args.n]
    store = Store.open(args.store or bundled_store(), readonly=True)
    calls = anyio.run(tool_calls, RetrievalService(store), questions)
    sdk = lambda r: pydantic_core.to_json(r.structured_content, fallback=str, indent=2).decode()   # the SDK's text
    compact = lambda r: json.dumps(r.structured_content, ensure_ascii=False, separators=(',', ':'))
    texts = lambda r: '\n\n'.join(c['text'] for c in r.structured_content['chunks'])
    rows = {'MCP SDK text of the JSON (indented), before': sdk, 'the same JSON without spaces': compact,
            "ragnb's text (each chunk under its citation)": lambda r: r.content[0].text,
            'the chunks\' texts alone (no citations)': texts}
    lc = {trim: create_retriever_tool(RagnbRetriever(store=store, top_k=5, opts=RetrieveOpts(trim=trim)), 'ask', 'ask')
          for trim in (False, True)}
    mean = lambda xs: sum(xs) / len(xs)
    print(f'Tokens a model reads per tool call: {len(questions)} questions of {Path(args.questions).name}, store '
          f'{store.path.name} ({store.stats()["chunks"]} chunks, {store.manifest["model"]}), k=5\n')
    print('| text of the result | ask | ask, trim=true | read (1,000 tokens) |')
    print('|---|---|---|---|')
    for name, f in rows.items():
        cells = [mean([n(f(call[i])) for call in calls]) for i in (1, 2, 3)]
        print(f'| {name} | ' + ' | '.join(f'{x:.0f}' for x in cells) + ' |')
    lc_cells = [mean([n(lc[trim].invoke({'query': q})) for q in questions]) for trim in (False, True)]
    print("| LangChain's `create_retriever_tool` over the same retriever (texts joined, no citations) | "
          + ' | '.join(f'{x:.0f}' for x in lc_cells) + ' | |')
    server = build_mcp_server(RetrievalService(store))
    listed = lambda tools: sum(n(json.dumps(dict(name=t.name, description=t.description, input_schema=t.input_schema),
                                            ensure_ascii=False)) for t in tools)
    slim, full = anyio.run(server.list_tools), anyio.run(type(server).list_tools, server)
    lc_def = json.dumps(convert_to_openai_tool(lc[False])['function'], ensure_ascii=False)
    print(f'\nTool definitions, which a client sends its model with every turn (name, description and input schema as '
          f'JSON): ragnb\'s {len(slim)} tools {listed(slim):,} tokens (as the SDK writes their schemas: '
          f'{listed(full):,}); LangChain\'s one retriever tool {n(lc_def):,}.')
    store.close()


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
