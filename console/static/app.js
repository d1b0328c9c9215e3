// The console's page script: one shell, five pages chosen by the path. Data comes from /api/*;
// live changes arrive as server-sent events (/api/events) fed from the log: nothing here polls.
// A run's timeline is the HTML report's own rendering (/api/runs/<id>/report), not redrawn here.

const page = document.getElementById('page');
const live = document.getElementById('live');
const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const fmtMs = (ms) =>
  ms === null || ms === undefined
    ? '–'
    : ms < 1000
      ? `${Math.round(ms)} ms`
      : ms < 120000
        ? `${(ms / 1000).toFixed(1)} s`
        : ms < 7200000
          ? `${Math.round(ms / 60000)} min`
          : `${(ms / 3600000).toFixed(1)} h`;
const pct = (x) => (x === null || x === undefined ? '–' : `${(x * 100).toFixed(1)}%`);

async function api(path, options = {}) {
  const res = await fetch(path, { headers: { 'Content-Type': 'application/json' }, ...options });
  const type = res.headers.get('Content-Type') ?? '';
  const body = type.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new Error(typeof body === 'object' && body.error ? body.error : `${res.status}`);
  return body;
}

// ---- live events ----------------------------------------------------------------------------
const listeners = new Set();
const events = new EventSource('/api/events');
events.addEventListener('open', () => ((live.textContent = 'live'), (live.className = 'live on')));
events.addEventListener('error', () => ((live.textContent = 'reconnecting…'), (live.className = 'live off')));
events.addEventListener('ready', (e) => {
  const d = JSON.parse(e.data);
  live.textContent = `live · index rebuilt in ${fmtMs(d.rebuild_ms)}`;
  for (const l of listeners) l({ type: 'ready', data: d });
});
events.addEventListener('runs', (e) => {
  const runs = JSON.parse(e.data);
  for (const l of listeners) l({ type: 'runs', runs });
});
/** Calls `fn` at most once per `ms`, with the latest call's arguments. */
function debounce(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => ((timer = null), fn()), ms);
  };
}

// ---- runs -----------------------------------------------------------------------------------
const STATUSES = ['in_progress', 'completed', 'failed', 'escalated', 'awaiting_input', 'awaiting_approval', 'budget_exhausted', 'expired'];

async function runsPage() {
  const params = new URLSearchParams(location.search);
  page.innerHTML = `<div class="counts" id="counts"></div>
<form class="filters" id="filters">
  <label>status<select name="status"><option value="">any</option>${STATUSES.map((s) => `<option>${s}</option>`).join('')}</select></label>
  <label>skill / flow<select name="flow"><option value="">any</option></select></label>
  <label>source<select name="source"><option value="">any</option></select></label>
  <label>from<input type="datetime-local" name="from"></label>
  <label>to<input type="datetime-local" name="to"></label>
  <label>thought_id or external id<input type="search" name="q" placeholder="search" size="28"></label>
  <label>release (manifest digest)<input type="search" name="manifest" placeholder="any" size="20"></label>
</form>
<div id="runs-meta" class="muted"></div>
<table class="grid" id="runs"><thead><tr><th>run</th><th>status</th><th>skill / flow</th><th>planner</th><th>source</th><th>external id</th><th>ticket</th><th>turns</th><th>tokens / cost</th><th>age</th><th>duration</th></tr></thead><tbody></tbody></table>`;
  const form = document.getElementById('filters');
  for (const [k, v] of params) if (form.elements[k]) form.elements[k].value = v;
  const query = () => {
    const q = new URLSearchParams();
    for (const el of form.elements) if (el.name && el.value) q.set(el.name, el.type === 'datetime-local' ? new Date(el.value).toISOString() : el.value);
    return q;
  };
  const load = async () => {
    const q = query();
    history.replaceState(null, '', q.toString() ? `/?${q}` : '/');
    const data = await api(`/api/runs?${q}&limit=200`);
    renderRuns(data, form);
  };
  form.addEventListener('input', debounce(load, 250));
  document.getElementById('counts').addEventListener('click', (e) => {
    const c = e.target.closest('.count');
    if (!c) return;
    form.elements.status.value = form.elements.status.value === c.dataset.status ? '' : c.dataset.status;
    load();
  });
  listeners.add(debounce(load, 300));
  await load();
}

function renderRuns(data, form) {
  const counts = document.getElementById('counts');
  const total = Object.values(data.counts).reduce((a, b) => a + b, 0);
  counts.innerHTML =
    `<div class="count" data-status=""><b>${total}</b><span>all</span></div>` +
    STATUSES.filter((s) => data.counts[s])
      .map(
        (s) =>
          `<div class="count ${form.elements.status.value === s ? 'selected' : ''}" data-status="${s}" data-count="${s}"><b>${data.counts[s]}</b><span>${s.replace('_', ' ')}</span></div>`,
      )
      .join('');
  for (const [name, values] of [
    ['flow', data.flows],
    ['source', data.sources],
  ]) {
    const sel = form.elements[name];
    const keep = sel.value;
    sel.innerHTML = `<option value="">any</option>${values.map((v) => `<option ${v === keep ? 'selected' : ''}>${esc(v)}</option>`).join('')}`;
  }
  if (data.stopped) {
    live.textContent = `not live: ${data.stopped}`;
    live.className = 'live off';
  }
  document.getElementById('runs-meta').textContent =
    `${data.total} run(s) match · showing ${data.runs.length} · ${data.indexed} indexed${data.ready ? ` · index rebuilt in ${fmtMs(data.rebuild_ms)}` : ' · the index is being rebuilt…'}`;
  const now = data.now;
  document.querySelector('#runs tbody').innerHTML = data.runs
    .map(
      (r) => `<tr class="run" data-thought-id="${esc(r.thought_id)}" data-status="${esc(r.status)}">
<td><a class="mono" href="/runs/${encodeURIComponent(r.thought_id)}">${esc(r.thought_id.slice(0, 18))}${r.thought_id.length > 18 ? '…' : ''}</a>${r.forked_from ? `<div class="muted">fork of ${esc(r.forked_from.slice(0, 12))}…</div>` : ''}</td>
<td><span class="badge ${esc(r.status)}">${esc(r.status.replace('_', ' '))}</span>${r.reason_code && r.reason_code !== r.status ? `<div class="muted">${esc(r.reason_code)}</div>` : ''}</td>
<td class="mono">${esc(r.flow ?? '–')}</td><td>${esc(r.planner ?? '–')}${r.manifest ? `<div class="muted mono"><a href="/?manifest=${esc(r.manifest)}" title="runs of release ${esc(r.manifest)}">${esc(r.manifest.slice(0, 12))}</a></div>` : ''}</td><td>${esc(r.source ?? '–')}</td><td class="mono">${esc(r.external_id ?? '–')}</td>
<td class="text">${esc(r.text)}</td><td class="num">${r.turns}</td><td class="num">${r.tokens ? r.tokens : '–'}${r.cost !== null ? ` / $${r.cost.toFixed(4)}` : ''}</td>
<td class="num">${fmtMs(now - r.started_at)}</td><td class="num">${fmtMs((r.ended_at ?? r.updated_at) - r.started_at)}${r.ended_at ? '' : '…'}</td></tr>`,
    )
    .join('');
}

// ---- a run ----------------------------------------------------------------------------------
async function runPage(id) {
  page.innerHTML = `<div class="panel actions" id="run-actions">
  <button id="verify" class="primary">Verify</button>
  <label>fork from <select id="fork-point"></select></label><button id="fork">Fork</button>
  <a href="/api/runs/${encodeURIComponent(id)}" class="muted">timeline JSON</a>
  <div id="action-result" class="result" style="flex-basis:100%"></div>
</div><div class="panel decide" id="decide" hidden></div><div id="report">loading the run from the log…</div>`;
  const report = document.getElementById('report');
  const result = document.getElementById('action-result');
  const load = async () => {
    try {
      const open = [...report.querySelectorAll('details[open]')].map(key);
      report.innerHTML = await api(`/api/runs/${encodeURIComponent(id)}/report`);
      for (const d of report.querySelectorAll('details')) if (open.includes(key(d))) d.open = true;
      const select = document.getElementById('fork-point');
      const keep = select.value;
      const waves = [...report.querySelectorAll('.wave')].map((w) => w.id.replace('wave-', ''));
      const steps = [...new Set([...report.querySelectorAll('tr.step')].map((s) => s.dataset.step))];
      select.innerHTML = [
        ...waves.map((w) => `<option value="${esc(w)}">wave ${esc(w)}</option>`),
        ...steps.map((s) => `<option value="${esc(s)}">step ${esc(s)}</option>`),
      ].join('');
      if (keep) select.value = keep;
      decisionPanel();
    } catch (err) {
      report.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    }
  };
  // Approve or deny the pending calls of a run awaiting approval, each by its interrupt id, or
  // approve one with edited arguments; answer a run awaiting input.
  const decide = document.getElementById('decide');
  const decisionPanel = () => {
    const status = report.querySelector('.status')?.dataset.status;
    const outcomes = report.querySelectorAll('.outcome');
    const pending =
      status === 'awaiting_approval'
        ? [...(outcomes[outcomes.length - 1]?.querySelectorAll('tr.approval-call[data-decision=pending]') ?? [])].map((r) => ({
            interrupt: r.dataset.interrupt,
            step: r.dataset.step,
            tool: r.dataset.tool,
            args: r.dataset.arguments,
            why: r.cells[4]?.childNodes[0]?.textContent ?? '',
            rule: r.cells[4]?.querySelector('small')?.textContent ?? '',
          }))
        : [];
    const shown = status === 'awaiting_input' ? 'input' : pending.length ? `approval:${pending.map((p) => p.interrupt || p.step).join(',')}` : '';
    if (decide.dataset.shown === shown) return; // keep what the person is typing across live reloads
    decide.dataset.shown = shown;
    decide.hidden = !shown;
    if (status === 'awaiting_input') {
      decide.innerHTML = `<label>reply to the run<textarea id="reply-text" rows="2" cols="60" placeholder="the answer the run waits for"></textarea></label><button id="reply" class="primary">Send reply</button>`;
      document.getElementById('reply').addEventListener('click', (e) => act(e.target, 'reply', { text: document.getElementById('reply-text').value }));
    } else if (pending.length) {
      decide.innerHTML = `<b>${pending.length} call(s) await approval</b>
<label>reason<input id="decision-reason" size="40" maxlength="2000" placeholder="recorded with the decision; a denial's reason reaches the model"></label>
<button id="approve" class="primary">Approve all</button><button id="deny" class="danger">Deny all</button>
${pending
  .map(
    (p) => `<div class="pending-call" data-interrupt="${esc(p.interrupt)}" data-step="${esc(p.step)}">
<div><code class="interrupt">${esc(p.interrupt || p.step)}</code> <b>${esc(p.tool)}</b> ${esc(p.why)} <span class="muted">${esc(p.rule)}</span></div>
<pre class="proposed">${esc(pretty(p.args))}</pre>
<button class="approve primary">Approve</button><button class="deny danger">Deny</button>${p.interrupt ? '<button class="edit">Approve with edits…</button>' : ''}
<div class="editor" hidden><label>arguments (JSON)<textarea class="arguments" rows="6" cols="60" spellcheck="false">${esc(pretty(p.args))}</textarea></label><button class="approve-edited primary">Approve with these arguments</button></div>
</div>`,
  )
  .join('')}`;
      const reason = () => (document.getElementById('decision-reason').value ? { reason: document.getElementById('decision-reason').value } : {});
      document.getElementById('approve').addEventListener('click', (e) => act(e.target, 'approve', reason()));
      document.getElementById('deny').addEventListener('click', (e) => act(e.target, 'deny', reason()));
      for (const el of decide.querySelectorAll('.pending-call')) {
        const which = el.dataset.interrupt ? { interrupt: el.dataset.interrupt } : { step: el.dataset.step };
        el.querySelector('.approve').addEventListener('click', (e) => act(e.target, 'approve', { ...which, ...reason() }));
        el.querySelector('.deny').addEventListener('click', (e) => act(e.target, 'deny', { ...which, ...reason() }));
        el.querySelector('.edit')?.addEventListener('click', () => (el.querySelector('.editor').hidden = !el.querySelector('.editor').hidden));
        el.querySelector('.approve-edited')?.addEventListener('click', (e) => {
          let args;
          try {
            args = JSON.parse(el.querySelector('.arguments').value);
          } catch (err) {
            return void (result.innerHTML = `<p class="error" id="decision-error">The arguments are not JSON: ${esc(err.message)}</p>`);
          }
          act(e.target, 'approve', { ...which, arguments: args, ...reason() });
        });
      }
    } else decide.innerHTML = '';
  };
  const pretty = (json) => {
    try {
      return JSON.stringify(JSON.parse(json), null, 2);
    } catch {
      return json ?? '';
    }
  };
  const act = async (button, what, body) => {
    button.disabled = true;
    try {
      const r = await api(`/api/runs/${encodeURIComponent(id)}/${what}`, { method: 'POST', body: JSON.stringify(body) });
      const done = what === 'reply' ? 'Reply' : what === 'approve' ? (body.arguments ? 'Approval with edited arguments' : 'Approval') : 'Denial';
      result.innerHTML = `<p id="decision-result">${done} recorded (task <span class="mono">${esc(r.task_id)}</span>); the run goes on as Thought reads it.</p>`;
    } catch (err) {
      result.innerHTML = `<p class="error" id="decision-error">${esc(err.message)}</p>`;
    } finally {
      button.disabled = false;
    }
  };
  const key = (d) => `${d.closest('[id]')?.id ?? ''}/${d.dataset.step ?? ''}/${d.querySelector('summary')?.textContent ?? ''}`;
  document.getElementById('verify').addEventListener('click', async (e) => {
    e.target.disabled = true;
    result.innerHTML = '<p class="muted">verifying: re-deciding every recorded input with today\'s code…</p>';
    try {
      const v = await api(`/api/runs/${encodeURIComponent(id)}/verify`, { method: 'POST', body: '{}' });
      result.innerHTML = `<p id="verify-verdict" class="${v.report.drift ? 'drift-found' : 'drift-none'}">${v.report.drift ? 'Drift found' : 'No drift'}: ${v.report.checked.records_compared} record(s) compared</p><pre id="verify-report">${esc(v.text)}</pre>`;
    } catch (err) {
      result.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    } finally {
      e.target.disabled = false;
    }
  });
  document.getElementById('fork').addEventListener('click', async (e) => {
    const point = document.getElementById('fork-point').value;
    if (!point) return;
    e.target.disabled = true;
    try {
      const f = await api(`/api/runs/${encodeURIComponent(id)}/fork`, { method: 'POST', body: JSON.stringify({ point }) });
      result.innerHTML = `<p id="fork-result">Forked at ${esc(f.point)} (wave ${f.iteration}) as <a href="/runs/${encodeURIComponent(f.thought_id)}" class="mono">${esc(f.thought_id)}</a></p>`;
    } catch (err) {
      result.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    } finally {
      e.target.disabled = false;
    }
  });
  const reload = debounce(load, 300);
  listeners.add((e) => {
    if (e.type === 'runs' && e.runs.some((r) => r.thought_id === id)) reload();
  });
  await load();
}

// ---- dead letters ---------------------------------------------------------------------------
async function deadLettersPage() {
  page.innerHTML = `<div id="dlq-counts"></div><div class="panel actions"><button id="redrive" class="primary" disabled>Re-drive selected</button><span class="muted">Each dead letter is re-driven to its source topic exactly once, as tao dlq redrive does.</span><div id="redrive-result" class="result" style="flex-basis:100%"></div></div><div id="dlq-entries">reading the dead-letter topics…</div>`;
  const load = async () => {
    const l = await api('/api/dead-letters');
    document.getElementById('dlq-counts').innerHTML =
      `<h2 class="section">By topic and reason</h2><table class="grid"><thead><tr><th>topic</th><th>reason</th><th>count</th><th>re-driven</th></tr></thead><tbody>${l.counts.map((c) => `<tr><td class="mono">${esc(c.topic)}</td><td>${esc(c.reason)}</td><td class="num">${c.count}</td><td class="num">${c.redriven}</td></tr>`).join('') || '<tr><td colspan="4">No dead letters.</td></tr>'}</tbody></table>`;
    document.getElementById('dlq-entries').innerHTML =
      `<h2 class="section">Dead letters</h2><table class="grid"><thead><tr><th></th><th>dead letter</th><th>source</th><th>key</th><th>code</th><th>stage</th><th>re-driven</th><th>error</th><th>original</th></tr></thead><tbody>${l.entries
        .map(
          (
            d,
          ) => `<tr class="dead-letter" data-topic="${esc(d.ref.topic)}" data-partition="${d.ref.partition}" data-offset="${esc(d.ref.offset)}" data-redriven="${d.redriven}">
<td><input type="checkbox" aria-label="select"></td><td class="mono">${esc(`${d.ref.topic}[${d.ref.partition}]@${d.ref.offset}`)}</td><td class="mono">${d.source ? esc(`${d.source.topic}[${d.source.partition}]@${d.source.offset}`) : '?'}</td>
<td class="mono">${d.key ? `<a href="/runs/${encodeURIComponent(d.key)}">${esc(d.key.slice(0, 18))}</a>` : '(null)'}</td><td>${esc(d.code)}</td><td>${esc(d.stage)} (attempt ${d.attempt})</td><td>${d.redriven ? 'yes' : 'no'}</td><td>${esc(d.message)}</td>
<td>${d.original.value !== null ? `<details><summary>decoded</summary><pre>${esc(JSON.stringify(d.original.value, null, 2))}</pre></details>` : `<code>${esc(d.original.utf8)}</code>`}</td></tr>`,
        )
        .join('')}</tbody></table>`;
    const button = document.getElementById('redrive');
    document.getElementById('dlq-entries').addEventListener('change', () => (button.disabled = !document.querySelector('tr.dead-letter input:checked')));
  };
  document.getElementById('redrive').addEventListener('click', async (e) => {
    const chosen = [...document.querySelectorAll('tr.dead-letter')].filter((tr) => tr.querySelector('input').checked);
    const byTopic = new Map();
    for (const tr of chosen)
      byTopic.set(tr.dataset.topic, [...(byTopic.get(tr.dataset.topic) ?? []), { partition: Number(tr.dataset.partition), offset: tr.dataset.offset }]);
    e.target.disabled = true;
    const out = document.getElementById('redrive-result');
    try {
      const reports = [];
      for (const [topic, offsets] of byTopic)
        reports.push(await api('/api/dead-letters/redrive', { method: 'POST', body: JSON.stringify({ topic, offsets }) }));
      const now = reports.reduce((n, r) => n + r.redriven.length, 0);
      const before = reports.reduce((n, r) => n + r.already.length, 0);
      out.innerHTML = `<p id="redrive-summary" data-now="${now}" data-before="${before}">${now} re-driven now, ${before} re-driven before (nothing written for those).</p>`;
      await load();
    } catch (err) {
      out.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    }
  });
  await load();
}

// ---- releases -------------------------------------------------------------------------------
// Each release's rates over the ended runs in the index, as `tao rollout status` computes them.
async function releasesPage() {
  const load = async () => {
    const d = await api('/api/manifests');
    const p = d.pointer;
    const pointer = p
      ? `active <code>${esc((p.active ?? '–').slice(0, 12))}</code>${p.candidate ? `, candidate <code>${esc(p.candidate.slice(0, 12))}</code> at ${p.percent}%` : ''}${p.previous ? `, previous <code>${esc(p.previous.slice(0, 12))}</code>` : ''} <span class="muted">(${esc(p.reason)}, ${new Date(p.changed_at).toISOString()})</span>`
      : d.pointer_error
        ? `<span class="error">${esc(d.pointer_error)}</span>`
        : 'no release pointer recorded: each stage runs its deployment manifest';
    page.innerHTML = `<div class="panel" id="pointer">release: ${pointer}</div>
<div class="muted">${d.ready ? 'ended runs in the index' : 'the index is being rebuilt…'}; self-recovery: runs that hit a failure and completed without a person, of those that hit a failure</div>
<table class="grid" id="manifests"><thead><tr><th>release</th><th>role</th><th>runs</th><th>TCR</th><th>self-recovery</th><th>escalated</th><th>failed</th><th>steps / run</th><th>cost / run</th></tr></thead><tbody>${
      d.manifests
        .map(
          (m) => `<tr class="manifest" data-manifest="${esc(m.manifest ?? 'none')}">
<td class="mono"><a href="/?manifest=${esc(m.manifest ?? 'none')}" title="${esc(m.manifest ?? 'runs recorded without a release')}">${esc(m.manifest ? m.manifest.slice(0, 12) : '(no release)')}</a></td><td>${esc(m.role)}</td>
<td class="num runs">${m.runs}</td><td class="num tcr">${pct(m.tcr)}</td><td class="num srr">${pct(m.srr)} <span class="muted">${m.recovered}/${m.hitFailure}</span></td>
<td class="num">${m.escalated}</td><td class="num">${m.failed}</td><td class="num">${m.stepsPerRun.toFixed(2)}</td><td class="num">${m.costPerRun === null ? '–' : `$${m.costPerRun.toFixed(4)}`}</td></tr>`,
        )
        .join('') || '<tr><td colspan="9">No ended runs yet.</td></tr>'
    }</tbody></table>`;
  };
  listeners.add(debounce(load, 1000));
  await load();
}

// ---- health ---------------------------------------------------------------------------------
async function healthPage() {
  page.innerHTML = '<p class="muted">asking the cluster and the stages…</p>';
  const h = await api('/api/health');
  const s = h.status;
  const breakers = s.endpoints.flatMap((e) => Object.entries(e.breakers ?? {}).map(([tool, state]) => ({ url: e.url, tool, state })));
  page.innerHTML = `<div class="tiles">
<div class="tile" id="tcr"><span>task completion rate</span><b>${pct(h.rates.tcr)}</b><span>${h.rates.completed} of ${h.rates.ended} ended runs</span></div>
<div class="tile" id="srr"><span>self-recovery rate</span><b>${pct(h.rates.srr)}</b><span>${h.rates.recovered} of ${h.rates.hit_failure} runs that hit a failure</span></div>
<div class="tile" id="ti"><span>traceability index</span><b>${pct(h.rates.ti)}</b><span>${h.rates.steps_with_evidence} of ${h.rates.steps} steps</span></div>
<div class="tile"><span>runs in flight</span><b>${s.runs ? s.runs.running : '–'}</b><span>${s.runs ? `${s.runs.awaitingInput} awaiting input, ${s.runs.awaitingApproval} awaiting approval` : ''}</span></div>
<div class="tile"><span>index</span><b>${h.index.runs}</b><span>runs, rebuilt in ${fmtMs(h.index.rebuild_ms)}</span></div></div>
<h2 class="section">Outcomes per minute (last hour)</h2><div class="panel" id="chart"></div>
<h2 class="section">Consumer groups</h2><table class="grid" id="groups"><thead><tr><th>stage</th><th>group</th><th>state</th><th>instances</th><th>lag</th></tr></thead><tbody>${s.groups.map((g) => `<tr><td>${esc(g.stage)}</td><td class="mono">${esc(g.group)}</td><td>${esc(g.state)}</td><td class="num">${g.members}</td><td class="num">${g.lag}</td></tr>`).join('')}</tbody></table>
<h2 class="section">Lag per partition</h2><table class="grid" id="lag"><thead><tr><th>group</th><th>topic</th><th>partition</th><th>committed</th><th>end</th><th>lag</th></tr></thead><tbody>${s.lag.map((l) => `<tr><td class="mono">${esc(l.group)}</td><td class="mono">${esc(l.topic)}</td><td class="num">${l.partition}</td><td class="num">${l.committed ?? '–'}</td><td class="num">${l.end}</td><td class="num">${l.lag}</td></tr>`).join('')}</tbody></table>
<h2 class="section">Tools</h2><table class="grid" id="tools"><thead><tr><th>tool</th><th>calls</th><th>errors</th><th>error rate</th><th>mean latency</th><th>max latency</th></tr></thead><tbody>${h.tools.map((t) => `<tr><td class="mono">${esc(t.tool)}</td><td class="num">${t.calls}</td><td class="num">${t.errors}</td><td class="num">${pct(t.calls ? t.errors / t.calls : null)}</td><td class="num">${fmtMs(t.calls ? t.total_ms / t.calls : null)}</td><td class="num">${fmtMs(t.max_ms)}</td></tr>`).join('') || '<tr><td colspan="6">No tool calls yet.</td></tr>'}</tbody></table>
<h2 class="section">Breakers and stage processes</h2><table class="grid" id="breakers"><thead><tr><th>process</th><th>stage</th><th>reachable</th><th>breakers (tool: state)</th></tr></thead><tbody>${s.endpoints
    .map(
      (e) =>
        `<tr><td class="mono">${esc(e.url)}</td><td>${esc(e.stage ?? '–')}</td><td>${e.reachable ? 'yes' : `no <span class="muted">${esc(e.error ?? '')}</span>`}</td><td>${
          breakers
            .filter((b) => b.url === e.url)
            .map((b) => `<code>${esc(b.tool)}</code>: ${esc(b.state)}`)
            .join(', ') || '–'
        }</td></tr>`,
    )
    .join('')}</tbody></table>
<h2 class="section">Dead letters</h2><table class="grid"><thead><tr><th>topic</th><th>records</th><th>by reason</th></tr></thead><tbody>${s.deadLetters
    .map(
      (d) =>
        `<tr><td class="mono">${esc(d.topic)}</td><td class="num">${d.records}</td><td>${esc(
          Object.entries(d.byReason)
            .map(([k, v]) => `${k} ${v}`)
            .join(', '),
        )}</td></tr>`,
    )
    .join('')}</tbody></table>`;
  await loadScript('/static/vendor/uplot.iife.min.js');
  chart(document.getElementById('chart'), h.perMinute);
}

/** Loads a classic script once (the chart library only on the page that draws charts). */
function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = Object.assign(document.createElement('script'), { src, onload: resolve, onerror: () => reject(new Error(`could not load ${src}`)) });
    document.head.append(s);
  });
}

function chart(el, perMinute) {
  if (typeof uPlot === 'undefined') return void (el.textContent = 'chart library not loaded');
  const statuses = [...new Set(perMinute.flatMap((m) => Object.keys(m.counts)))];
  const colours = { completed: '#1f7a3a', failed: '#b3261e', escalated: '#b36b00', budget_exhausted: '#8e44ad', expired: '#8a8a8a' };
  const data = [perMinute.map((m) => m.at / 1000), ...statuses.map((s) => perMinute.map((m) => m.counts[s] ?? 0))];
  new uPlot(
    {
      width: Math.min(1100, el.clientWidth - 20),
      height: 220,
      series: [{}, ...statuses.map((s) => ({ label: s, stroke: colours[s] ?? '#555', width: 2 }))],
      axes: [{}, { label: 'outcomes / min' }],
    },
    data,
    el,
  );
}

// ---- routing --------------------------------------------------------------------------------
const path = location.pathname;
const nav = path.startsWith('/dead-letters') ? 'dead-letters' : path.startsWith('/health') ? 'health' : path.startsWith('/releases') ? 'releases' : 'runs';
document.querySelector(`[data-nav="${nav}"]`)?.classList.add('active');
const run = /^\/runs\/([^/]+)$/.exec(path);
const render = run
  ? runPage(decodeURIComponent(run[1]))
  : nav === 'dead-letters'
    ? deadLettersPage()
    : nav === 'health'
      ? healthPage()
      : nav === 'releases'
        ? releasesPage()
        : runsPage();
render.catch((err) => (page.innerHTML = `<p class="error">${esc(err.message)}</p>`));
