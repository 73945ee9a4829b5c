"""SessionDB at scale: search, append, list, read and multi-process writes on a big state.db.

    .venv/bin/python bench/session_db.py                 # 1,000,000 messages / 20,000 sessions
    .venv/bin/python bench/session_db.py --quick         # 50,000 messages / 1,000 sessions
    .venv/bin/python bench/session_db.py --db /tmp/big.db  # build once there, reuse afterwards

The corpus is synthetic but shaped like agent transcripts: Zipf-distributed English and
technical words, code identifiers (snake_case, dotted and hyphenated names, paths), tool calls
with JSON arguments, long tool results, a few percent CJK messages, sessions of very different
lengths interleaved in time, one 5,000-message session. It is bulk-loaded with the triggers
dropped; reopening SessionDB then notices the missing triggers and rebuilds both indexes.

Targets: FTS stage (sanitise + MATCH + rank + group by session) p50 <= 30 ms, p99 <= 100 ms;
append_message p99 <= 2 ms; list_sessions, and session/list through the real server
(acp-hermes on a HERMES_HOME linked to this database), <= 20 ms; reading 5,000 messages well under 300 ms;
zero failed writes with 4 processes appending at once.

The appends run back to back, so SessionDB's idle-time index merges do not run among them: what
is timed is the append itself plus FTS5's crisis merges of a burst. The run ends by waiting for
those merges (reported), which leaves a reused database as tidy as the pauses of real use would.
Append figures depend on the state a reused database was left in (segments other runs' bulk
deletes left behind make one crisis merge of the next burst slower), so compare runs on copies of
one database.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import random
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from startup import AgentProcess, add_server_option, editor_env, initialize_params, scratch_dirs

from acp_hermes_memory.fts_query import is_cjk_query, sanitize_fts_query, trigram_query
from acp_hermes_memory.session_db import SessionDB
from acp_hermes_memory.session_db.upkeep import INDEX_MERGE_IDLE_SECONDS

BIG_SESSION_ID = "bench-big-session"
BIG_SESSION_MESSAGES = 5_000
PROJECT_COUNT = 60
SEARCH_LIMIT = 50
SESSIONS_PER_SEARCH = 3
TARGET_FTS_P50_MS = 30.0
TARGET_FTS_P99_MS = 100.0
TARGET_APPEND_P99_MS = 2.0
TARGET_LIST_MS = 20.0
TARGET_READ_MS = 300.0


def _wordlist(text: str) -> list[str]:
    return text.split()


COMMON_WORDS = _wordlist("""
the be to of and a in that have it for not on with he as you do at this but his by from they we
say her she or an will my one all would there their what so up out if about who get which go me when make can like
time no just him know take people into year your good some could them see other than then now look only come its
over think also back after use two how our work first well way even new want because any these give day most us
is was are been has had did does should may might must shall let need here where why very more much many such own
same each few both those while before through during without again further once under above below between""")
TECH_WORDS = _wordlist("""
error test file function database migration deploy deployment server client request response
config configuration module package import export build compile runtime exception stack trace debug log logging
cache memory session search index query schema table column row commit branch merge rebase pull push release
version update upgrade install dependency library framework api endpoint route handler middleware auth token
login password user permission role admin container docker kubernetes cluster node pod service network port socket
thread process async await promise callback event queue worker job task scheduler cron timeout retry backoff
latency throughput benchmark profile performance optimize refactor cleanup lint format type typing annotation
interface class method attribute property field record struct enum constant variable argument parameter return
value result output input stream buffer encode decode serialize parse json yaml toml csv xml html css javascript
typescript python rust golang java kotlin swift sqlite postgres mysql redis kafka rabbitmq nginx apache linux macos
windows terminal shell bash zsh command script pipeline workflow ci github gitlab review approve reject patch diff
hunk conflict resolve fix bug issue feature ticket milestone sprint plan design architecture diagram document readme
changelog license copyright header footer layout component render state props hook effect context provider store
reducer action dispatch selector router navigation page view template partial widget button form validation
embedding vector model prompt completion streaming tokenizer transformer inference training dataset evaluation
metric accuracy loss gradient optimizer checkpoint snapshot backup restore rollback recovery replica shard partition
lock mutex semaphore deadlock race condition atomic transaction isolation consistency durability wal journal vacuum
compaction compression summary title lineage fork parent child archive cursor pagination offset limit filter sort
rank snippet highlight trigram tokenize unicode emoji locale timezone timestamp date duration interval""")
CJK_WORDS = _wordlist("""
数据库 迁移 配置 文件 错误 测试 部署 服务器 用户 会话 搜索 索引 性能 日志 缓存 内存 线程 进程 队列 任务
调度 超时 重试 延迟 吞吐量 基准 优化 重构 清理 格式 类型 接口 方法 属性 字段 记录 结构 常量 变量 参数 返回 结果
输出 输入 编码 解码 序列化 解析 模型 提示 推理 训练 数据集 评估 指标 准确率 检查点 快照 备份 恢复 回滚 副本 分片
分区 死锁 事务 隔离 一致性 持久性 压缩 摘要 标题 分支 合并 提交 发布 版本 更新 升级 安装 依赖 框架 中间件 认证
令牌 登录 密码 权限 管理员 容器 集群 节点 网络 端口 终端 命令 脚本 流水线 工作流 代码审查 补丁 冲突 解决 修复
问题 功能 计划 设计 架构 文档 组件 渲染 状态 路由 页面 模板 按钮 表单 验证 向量 データベース ファイル テスト
サーバー ユーザー セッション キャッシュ メモリ エラー 설정 데이터베이스 파일 테스트""")
TOOL_NAMES = ("read_file", "write_file", "terminal", "search_files", "patch")
SYLLABLES = _wordlist("ka ri to mo nu se la vi do pe zu ha gi ro ne tu sa mi ko lu be fa ji wo xe qua pla stro dre vin")


@dataclass(frozen=True)
class Figures:
    """Percentiles in milliseconds."""

    p50: float
    p99: float
    maximum: float

    @classmethod
    def of(cls, samples_ms: list[float]) -> Figures:
        ordered = sorted(samples_ms)
        return cls(_percentile(ordered, 50), _percentile(ordered, 99), ordered[-1])

    def __str__(self) -> str:
        return f"p50 {self.p50:7.2f} ms   p99 {self.p99:7.2f} ms   max {self.maximum:7.2f} ms"


def _percentile(ordered: list[float], pct: float) -> float:
    index = min(len(ordered) - 1, max(0, math.ceil(pct / 100 * len(ordered)) - 1))
    return ordered[index]


class Corpus:
    """Deterministic synthetic transcript text."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        synthetic = sorted(
            {"".join(self.rng.choices(SYLLABLES, k=self.rng.randint(2, 4))) for _ in range(40_000)}
            - set(COMMON_WORDS)
            - set(TECH_WORDS)
        )
        self.rng.shuffle(synthetic)
        self.vocabulary = COMMON_WORDS + TECH_WORDS + synthetic
        weights = [1.0 / (rank + 2.7) for rank in range(len(self.vocabulary))]
        self.cumulative = list(itertools.accumulate(weights))
        self.identifiers = self._identifiers()
        self.projects = [f"/home/dev/src/{self._word()}-{self._word()}" for _ in range(PROJECT_COUNT)]

    def _word(self) -> str:
        return self.rng.choice(TECH_WORDS + self.vocabulary[400:3_000])

    def _identifiers(self) -> list[str]:
        rng, word = self.rng, self._word
        names: list[str] = []
        for _ in range(6_000):
            shape = rng.randrange(6)
            if shape == 0:
                names.append(f"{word()}_{word()}")
            elif shape == 1:
                names.append(f"{word()}-{word()}")
            elif shape == 2:
                names.append(f"{word()}.{word()}.{rng.choice(['py', 'ts', 'rs', 'go', 'md', 'json'])}")
            elif shape == 3:
                names.append(f"src/{word()}/{word()}.py")
            elif shape == 4:
                names.append(f"P{rng.randint(1, 9)}.{rng.randint(1, 20)}")
            else:
                names.append(f"{word()}{word().capitalize()}")
        return names

    def words(self, count: int) -> list[str]:
        return self.rng.choices(self.vocabulary, cum_weights=self.cumulative, k=count)

    def text(self, count: int) -> str:
        words = self.words(count)
        for _ in range(max(1, count // 25)):
            words[self.rng.randrange(count)] = self.rng.choice(self.identifiers)
        for position in range(self.rng.randrange(8, 14), count, self.rng.randrange(8, 14)):
            words[position] += "."
        return " ".join(words)

    def cjk_text(self) -> str:
        runs = ["".join(self.rng.choices(CJK_WORDS, k=self.rng.randint(3, 8))) for _ in range(self.rng.randint(1, 4))]
        return "，".join(runs) + " " + " ".join(self.rng.choices(self.identifiers, k=2))

    def message_text(self, role: str) -> str:
        if self.rng.random() < 0.03:
            return self.cjk_text()
        if role == "user":
            return self.text(self.rng.randint(8, 60))
        if role == "assistant":
            return self.text(self.rng.randint(20, 140))
        return self.text(self.rng.randint(30, 500 if self.rng.random() < 0.1 else 120))

    def system_prompt(self) -> str:
        return "You are Hermes, a coding agent.\n" + self.text(900)

    def queries(self, count: int) -> list[str]:
        """Queries shaped like the model's session_search calls."""
        rng = self.rng
        mid = self.vocabulary[150:2_500]
        rare = self.vocabulary[2_500:20_000]
        makers: list[Callable[[], str]] = [
            lambda: rng.choice(TECH_WORDS),
            lambda: f"{rng.choice(TECH_WORDS)} {rng.choice(TECH_WORDS)}",
            lambda: f"{rng.choice(TECH_WORDS)} {rng.choice(mid)} {rng.choice(TECH_WORDS)}",
            lambda: rng.choice(rare),
            lambda: f"{rng.choice(mid)} {rng.choice(rare)}",
            lambda: rng.choice(self.identifiers),
            lambda: f"{rng.choice(self.identifiers)} {rng.choice(TECH_WORDS)}",
            lambda: f'"{" ".join(self.words(2))}"',
            lambda: f'"{rng.choice(TECH_WORDS)} {rng.choice(TECH_WORDS)}" {rng.choice(mid)}',
            lambda: _stem(rng.choice(TECH_WORDS)) + "*",
            lambda: f"{rng.choice(TECH_WORDS)} OR {rng.choice(TECH_WORDS)}",
            lambda: f"{rng.choice(TECH_WORDS)} NOT {rng.choice(TECH_WORDS)}",
            lambda: "".join(rng.choices(CJK_WORDS, k=rng.randint(1, 2))),
            lambda: f"{rng.choice(CJK_WORDS)} {rng.choice(CJK_WORDS)}",
            lambda: f"the {rng.choice(TECH_WORDS)} is not working",
        ]
        return [makers[index % len(makers)]() for index in range(count)]


def _stem(word: str) -> str:
    """What a model writes for a prefix search: "deploy*", "migrat*", "config*"."""
    return word if len(word) <= 5 else word[: max(5, len(word) - 3)]


def noise_floor() -> Figures:
    """Timing jitter of this machine: a fixed ~0.3 ms CPU-bound loop, timed like an append."""
    samples = []
    for _ in range(2_000):
        started = time.perf_counter()
        sum(range(20_000))
        samples.append((time.perf_counter() - started) * 1_000)
    return Figures.of(samples)


# --- bulk build ----------------------------------------------------------------------------------


def _session_plan(corpus: Corpus, messages: int, sessions: int) -> list[tuple[str, int, str]]:
    """(session id, message count, cwd) with heavy-tailed lengths summing to ``messages``."""
    rng = corpus.rng
    regular = messages - BIG_SESSION_MESSAGES
    weights = [rng.paretovariate(1.3) for _ in range(sessions - 1)]
    scale = regular / sum(weights)
    counts = [max(1, int(weight * scale)) for weight in weights]
    counts[0] += regular - sum(counts)
    if counts[0] < 1:
        raise SystemExit("too few messages for that many sessions")
    project_weights = [1.0 / (rank + 1) for rank in range(PROJECT_COUNT)]
    cwds = rng.choices(corpus.projects, weights=project_weights, k=sessions)
    plan = [(f"bench-{index:06d}", count, cwds[index]) for index, count in enumerate(counts)]
    plan.append((BIG_SESSION_ID, BIG_SESSION_MESSAGES, corpus.projects[0]))
    return plan


def _interleaved(plan: list[tuple[str, int, str]], rng: random.Random) -> Iterator[str]:
    """Session ids in write order: a few sessions active at a time, the big one spread over all."""
    regular = sum(count for session_id, count, _ in plan if session_id != BIG_SESSION_ID)
    big_every = max(1, regular // BIG_SESSION_MESSAGES)
    queue = [(session_id, count) for session_id, count, _ in plan if session_id != BIG_SESSION_ID]
    queue.reverse()
    active: list[list[Any]] = []
    written = big_written = 0
    while queue or active:
        while queue and len(active) < 8:
            active.append(list(queue.pop()))
        slot = rng.randrange(len(active))
        active[slot][1] -= 1
        yield active[slot][0]
        if active[slot][1] == 0:
            active.pop(slot)
        written += 1
        if written % big_every == 0 and big_written < BIG_SESSION_MESSAGES:
            big_written += 1
            yield BIG_SESSION_ID
    for _ in range(BIG_SESSION_MESSAGES - big_written):
        yield BIG_SESSION_ID


def _message_rows(corpus: Corpus, plan: list[tuple[str, int, str]], start: float) -> Iterator[tuple[Any, ...]]:
    """Turns of user -> assistant (60% with a tool call) -> tool result -> assistant ..."""
    rng = corpus.rng
    open_calls: dict[str, tuple[str, str]] = {}
    last_role: dict[str, str] = {}
    clock = start
    for session_id in _interleaved(plan, rng):
        clock += rng.uniform(0.5, 40.0)
        call = open_calls.pop(session_id, None)
        tool_calls = None
        if call is not None:
            role = "tool"
        elif last_role.get(session_id) in ("user", "tool"):
            role = "assistant"
            if rng.random() < 0.6:
                new_call = (f"toolu_{rng.getrandbits(64):016x}", rng.choice(TOOL_NAMES))
                open_calls[session_id] = new_call
                arguments = {"path": rng.choice(corpus.identifiers), "query": " ".join(corpus.words(3))}
                tool_calls = [{"id": new_call[0], "name": new_call[1], "arguments": arguments}]
        else:
            role = "user"
        last_role[session_id] = role
        text = corpus.message_text(role)
        payload: list[dict[str, Any]] = [{"type": "text", "text": text}]
        display = None
        if call is not None:
            payload = [{"type": "tool_result", "tool_use_id": call[0], "content": text}]
            display = {"kind": "text", "text": text[:200]}
        for tool_call in tool_calls or ():
            payload.append({"type": "tool_use", **tool_call})
        yield (
            session_id,
            role,
            text,
            call[0] if call else None,
            json.dumps(tool_calls, separators=(",", ":")) if tool_calls else None,
            call[1] if call else None,
            clock,
            len(text) // 4,
            "tool_use" if tool_calls else ("end_turn" if role == "assistant" else None),
            json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
            json.dumps(display, ensure_ascii=False, separators=(",", ":")) if display else None,
        )


def build_database(path: Path, messages: int, sessions: int, seed: int) -> dict[str, float]:
    """Create the schema with SessionDB, bulk-load rows with the triggers off, let SessionDB rebuild."""
    timings: dict[str, float] = {}
    corpus = Corpus(seed)
    SessionDB(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    triggers = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    for name in triggers:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-512000")
    started = time.perf_counter()
    plan = _session_plan(corpus, messages, sessions)
    start_clock = time.time() - 365 * 86_400
    counters: dict[str, list[float]] = {session_id: [0, 0, start_clock] for session_id, _, _ in plan}
    conn.execute("BEGIN")
    batch: list[tuple[Any, ...]] = []
    insert = (
        "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, "
        "token_count, finish_reason, payload, display) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    for row in _message_rows(corpus, plan, start_clock):
        counter = counters[row[0]]
        counter[0] += 1
        counter[1] += 1 if row[4] else 0
        counter[2] = row[6]
        batch.append(row)
        if len(batch) == 20_000:
            conn.executemany(insert, batch)
            batch.clear()
    conn.executemany(insert, batch)
    prompts = [corpus.system_prompt() for _ in range(50)]
    conn.executemany(
        "INSERT INTO sessions (id, source, model, mode, cwd, title, started_at, updated_at, message_count, "
        "tool_call_count, input_tokens, output_tokens, model_config, system_prompt) "
        "VALUES (?, 'acp', 'claude-sonnet-5-5', 'default', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (
                session_id,
                cwd,
                " ".join(corpus.words(4)),
                start_clock,
                counters[session_id][2],
                int(counters[session_id][0]),
                int(counters[session_id][1]),
                int(counters[session_id][0]) * 900,
                int(counters[session_id][0]) * 150,
                json.dumps({"thought_level": "low"}),
                prompts[index % len(prompts)],
            )
            for index, (session_id, _, cwd) in enumerate(plan)
        ),
    )
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    timings["load rows"] = time.perf_counter() - started
    started = time.perf_counter()
    SessionDB(path).close()  # finds its triggers missing: recreates them and rebuilds the indexes
    timings["build indexes (reopen)"] = time.perf_counter() - started
    return timings


# --- measurements --------------------------------------------------------------------------------


def _largest_objects(path: Path) -> str:
    """Where the bytes are, from SQLite's dbstat table when the build has it."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 5").fetchall()
    except sqlite3.OperationalError:
        return "no dbstat in this SQLite build"
    finally:
        conn.close()
    return ", ".join(f"{name} {size / 2**20:.0f}" for name, size in rows)


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return (time.perf_counter() - started) * 1_000, result


def fts_stage(db: SessionDB, query: str, exclude: set[str]) -> list[str]:
    """What recall does before summarising: sanitise, match, rank, keep the best sessions."""
    if is_cjk_query(query) and (expression := trigram_query(query)):
        hits = db.search_messages(expression, trigram=True, exclude_sessions=exclude, limit=SEARCH_LIMIT)
    else:
        hits = db.search_messages(sanitize_fts_query(query), exclude_sessions=exclude, limit=SEARCH_LIMIT)
    best: dict[str, None] = {}
    for hit in hits:
        best.setdefault(hit.session_id, None)
        if len(best) == SESSIONS_PER_SEARCH:
            break
    return list(best)


def _timed_request(agent: AgentProcess, method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(ms from writing the request to the response line's arrival, the result)."""
    sent_ns = time.perf_counter_ns()
    line = agent.response(agent.send(method, params))
    return (line.at_ns - sent_ns) / 1e6, line.message["result"]


def acp_session_list(server: list[str], path: Path, project: str, rounds: int) -> tuple[Figures, Figures, Figures]:
    """``session/list`` through the real server on this database: first page, by cwd, next page.

    The server's HERMES_HOME holds a symlink to the database (SQLite follows it, so the WAL stays
    beside the real file). One unmeasured call first: state.db opens on a thread at start-up.
    """
    with scratch_dirs() as (home, workspace):
        own = home / "acp-hermes"
        own.mkdir(parents=True, exist_ok=True)
        (own / "state.db").symlink_to(path.resolve())
        agent = AgentProcess(server, editor_env(home), workspace)
        try:
            agent.request("initialize", initialize_params())
            _timed_request(agent, "session/list", {})
            first = [_timed_request(agent, "session/list", {})[0] for _ in range(rounds)]
            by_cwd = [_timed_request(agent, "session/list", {"cwd": project})[0] for _ in range(rounds)]
            cursor = _timed_request(agent, "session/list", {"cwd": project})[1]["nextCursor"]
            deep = [_timed_request(agent, "session/list", {"cwd": project, "cursor": cursor})[0] for _ in range(rounds)]
        finally:
            agent.close()
    return Figures.of(first), Figures.of(by_cwd), Figures.of(deep)


def _append_worker(path: str, worker: int, appends: int, barrier: Any, results: Any) -> None:
    corpus = Corpus(1_000 + worker)
    texts = [corpus.message_text("assistant") for _ in range(50)]
    failures = 0
    with SessionDB(Path(path)) as db:
        session_id = f"bench-concurrent-{worker}"
        db.create_session(session_id, cwd="/tmp", model="m", mode="default", model_config={}, system_prompt="b")
        barrier.wait()
        for index in range(appends):
            try:
                db.append_message(session_id, "user" if index % 2 else "assistant", texts[index % len(texts)])
            except Exception:
                failures += 1
    results.put(failures)


def concurrent_appends(path: Path, processes: int, appends: int) -> tuple[int, float, bool, float]:
    """(failed writes, appends per second overall, every row and counter present, merge seconds).

    The writers never pause, so their index segments are merged afterwards, by the process that
    checks and deletes their sessions, once it goes quiet: the last figure is how long that took
    (after the pause of INDEX_MERGE_IDLE_SECONDS). It also leaves a reused database tidy, as the
    quiet spells of real use would.
    """
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes + 1)
    results = context.Queue()
    workers = [
        context.Process(target=_append_worker, args=(str(path), worker, appends, barrier, results))
        for worker in range(processes)
    ]
    for process in workers:
        process.start()
    barrier.wait()
    started = time.perf_counter()
    failures = sum(results.get() for _ in workers)
    wall = time.perf_counter() - started
    for process in workers:
        process.join()
    with SessionDB(path) as db:
        complete = True
        for worker in range(processes):
            session_id = f"bench-concurrent-{worker}"
            record = db.get_session(session_id)
            rows = len(db.messages(session_id))
            complete = complete and rows == appends and record is not None and record.message_count == appends
            db.delete_session(session_id)
        started = time.perf_counter()
        db.wait_for_index_merges()
        merging = time.perf_counter() - started
    return failures, processes * appends / wall, complete, merging


def run(args: argparse.Namespace) -> int:
    workdir = None
    if args.db:
        path = Path(args.db)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="sessiondb-bench-"))
        path = workdir / "state.db"
    try:
        return _run_on(path, args)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


def _run_on(path: Path, args: argparse.Namespace) -> int:
    report: list[tuple[str, bool]] = []

    def check(label: str, ok: bool) -> None:
        report.append((label, ok))

    if path.exists():
        print(f"reusing {path}")
    else:
        print(f"building {args.messages:,} messages in {args.sessions:,} sessions at {path} ...", flush=True)
        for stage, seconds in build_database(path, args.messages, args.sessions, args.seed).items():
            print(f"  {stage:<24} {seconds:8.1f} s", flush=True)
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    print(f"database size            {size / 2**20:9.1f} MiB   ({_largest_objects(path)})")
    print(f"noise floor (fixed loop) {noise_floor()}")

    opens = []
    for _ in range(20):
        elapsed, db = _timed(lambda: SessionDB(path))
        opens.append(elapsed)
        db.close()
    print(f"open existing DB         {Figures.of(opens)}")

    with sqlite3.connect(path) as raw:
        stats = raw.execute("SELECT count(*), count(DISTINCT session_id) FROM messages").fetchone()
    raw.close()
    with SessionDB(path) as db:
        print(f"rows                     {stats[0]:,} messages in {stats[1]:,} sessions")
        corpus = Corpus(args.seed)  # same seed: same vocabulary, identifiers and projects as the data
        queries = corpus.queries(args.queries)
        exclude = db.lineage(BIG_SESSION_ID)
        for label in ("FTS stage (first pass)", "FTS stage (second pass)"):
            samples, found = [], 0
            for query in queries:
                elapsed, sessions = _timed(lambda q=query: fts_stage(db, q, exclude))
                samples.append(elapsed)
                found += bool(sessions)
            figures = Figures.of(samples)
            print(f"{label:<25}{figures}   ({found}/{len(queries)} queries found sessions)")
        slowest = sorted(zip(samples, queries, strict=True), reverse=True)[:5]
        print("  slowest: " + "; ".join(f"{q!r} {ms:.1f} ms" for ms, q in slowest))
        check(f"FTS p50 <= {TARGET_FTS_P50_MS} ms", figures.p50 <= TARGET_FTS_P50_MS)
        check(f"FTS p99 <= {TARGET_FTS_P99_MS} ms", figures.p99 <= TARGET_FTS_P99_MS)

        db.create_session(
            "bench-append", cwd=corpus.projects[0], model="m", mode="default", model_config={}, system_prompt="x"
        )
        texts = [corpus.message_text(role) for role in ("user", "assistant", "tool") * 40]
        appends = []
        for index in range(args.appends):
            text = texts[index % len(texts)]
            elapsed, _ = _timed(lambda t=text: db.append_message("bench-append", "assistant", t, payload=[t]))
            appends.append(elapsed)
        append_figures = Figures.of(appends)
        print(f"append_message           {append_figures}   ({args.appends} appends)")
        check(f"append p99 <= {TARGET_APPEND_P99_MS} ms", append_figures.p99 <= TARGET_APPEND_P99_MS)
        db.delete_session("bench-append")

        first_page = Figures.of([_timed(lambda: db.list_sessions(limit=50))[0] for _ in range(50)])
        by_cwd = Figures.of([_timed(lambda: db.list_sessions(cwd=corpus.projects[0], limit=50))[0] for _ in range(50)])
        project = corpus.projects[0]
        cursor = db.list_sessions(cwd=project, limit=50)[1]
        deep = Figures.of([_timed(lambda: db.list_sessions(cwd=project, cursor=cursor))[0] for _ in range(50)])
        print(f"list_sessions first page {first_page}")
        print(f"list_sessions by cwd     {by_cwd}")
        print(f"list_sessions next page  {deep}")
        check(f"list <= {TARGET_LIST_MS} ms", max(first_page.p99, by_cwd.p99, deep.p99) <= TARGET_LIST_MS)
        acp_first, acp_by_cwd, acp_deep = acp_session_list(shlex.split(args.server), path, project, rounds=50)
        print(f"session/list over ACP    {acp_first}")
        print(f"  by cwd                 {acp_by_cwd}")
        print(f"  next page              {acp_deep}")
        check(
            f"session/list over ACP <= {TARGET_LIST_MS} ms",
            max(acp_first.p99, acp_by_cwd.p99, acp_deep.p99) <= TARGET_LIST_MS,
        )

        reads = []
        for _ in range(5):
            elapsed, rows = _timed(lambda: db.messages(BIG_SESSION_ID))
            reads.append(elapsed)
        print(f"messages() of {len(rows):,}     {Figures.of(reads)}")
        check(f"5,000-message read < {TARGET_READ_MS} ms", max(reads) < TARGET_READ_MS)

        elapsed, fork = _timed(lambda: db.fork_session(BIG_SESSION_ID, "bench-fork", cwd="/tmp"))
        print(f"fork of {fork.message_count:,} messages     {elapsed:8.1f} ms")
        elapsed, _ = _timed(lambda: db.delete_session("bench-fork"))
        print(f"delete of {fork.message_count:,} messages   {elapsed:8.1f} ms")

    failures, throughput, complete, merging = concurrent_appends(path, args.processes, args.concurrent_appends)
    print(
        f"{args.processes} processes x {args.concurrent_appends} appends: {failures} failed writes, "
        f"{throughput:,.0f} appends/s, all rows and counters present: {complete}"
    )
    print(f"their index merges, once idle {merging:8.1f} s (including the {INDEX_MERGE_IDLE_SECONDS:.0f} s pause)")
    check("zero failed concurrent writes", failures == 0 and complete)

    print()
    for label, ok in report:
        print(f"  [{'ok' if ok else 'MISSED'}] {label}")
    return 0 if all(ok for _, ok in report) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="50,000 messages in 1,000 sessions")
    parser.add_argument("--db", help="database path: built there if missing, reused if present")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--appends", type=int, default=2_000)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--concurrent-appends", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    add_server_option(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.sessions = 50_000, 1_000
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
