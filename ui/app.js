// The Spillway web UI: a few pages over the JobManager's REST API, each at its own
// address (#/, #/jobs, #/jobs/<id> with its checkpoints, #/taskmanagers/<id>, #/submit),
// polled every second. preact + htm render, dagre lays out the stage graph, uPlot draws series.
// Every call names a route of the REST table (./api.js, written from src/rest/RestApi.ts at build).
// Nothing on the page depends on the browser's locale being one Intl knows (./locale.js).
import './locale.js';
import { h, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import dagre from 'dagre';
import uPlot from 'uplot';
import { pathOf, ROUTES } from './api.js';

const html = htm.bind(h);
const POLL_MS = 1000;
const TOKEN_KEY = 'spillway-token';

/** A call of `route` (of ROUTES) with its path's `params` and a JSON `body`, with the token the user gave, if any; a 401 asks for one. */
async function api(route, params = {}, body = undefined) {
  const token = localStorage.getItem(TOKEN_KEY);
  const headers = { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(pathOf(route, params), { method: route.method, body: body === undefined ? undefined : JSON.stringify(body), headers });
  if (response.status === 401) throw Object.assign(new Error('the JobManager wants a token'), { unauthorized: true });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error ?? `${response.status} ${response.statusText}`);
  return answer;
}

/** Polls GET `route` (of ROUTES) with its path's `params` every second while the page shows; null until the first answer. */
function usePolled(route, params = {}) {
  const path = pathOf(route, params);
  const [state, setState] = useState({ data: null, error: null });
  useEffect(() => {
    let live = true;
    const load = () =>
      api(route, params).then(
        (data) => live && setState({ data, error: null }),
        (error) => live && setState((s) => ({ data: s.data, error })),
      );
    load();
    const timer = setInterval(load, POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [path]);
  return state;
}

function useRoute() {
  const [route, setRoute] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const onHash = () => setRoute(location.hash.slice(1) || '/');
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return route;
}

const fmt = (n, digits = 0) => (n === undefined || n === null ? '-' : Number(n).toLocaleString('en', { maximumFractionDigits: digits }));
const pct = (r) => (r === undefined ? '-' : `${Math.round(r * 100)}%`);
const bytes = (n) => (n >= 1 << 20 ? `${fmt(n / (1 << 20), 1)} MiB` : n >= 1024 ? `${fmt(n / 1024, 1)} KiB` : `${fmt(n)} B`);
const two = (n) => String(n).padStart(2, '0');
/** A local time of day as HH:MM:SS: written out, since some browsers' default locale is a tag that toLocaleTimeString refuses. */
const time = (ms) => {
  if (!ms) return '-';
  const at = new Date(ms);
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
};

function Token({ error }) {
  const [value, setValue] = useState('');
  if (!error?.unauthorized) return null;
  const save = (event) => {
    event.preventDefault();
    localStorage.setItem(TOKEN_KEY, value.trim());
    location.reload();
  };
  return html`<form class="banner" onSubmit=${save}>
    The JobManager wants a token (the cluster secret). It is kept in this browser only.
    <input type="password" name="token" value=${value} onInput=${(e) => setValue(e.target.value)} />
    <button>Use it</button>
  </form>`;
}

function Problem({ error }) {
  if (!error) return null;
  return error.unauthorized ? html`<${Token} error=${error} />` : html`<div class="banner error">${error.message}</div>`;
}

/** Who leads: this JobManager's role, and the leader with its epoch and since when (GET /overview). */
function Leadership({ overview }) {
  const { role, leader } = overview;
  return html`<p class="leadership">
    This JobManager is the <b class=${`role ${role}`}>${role}</b>.
    ${leader ? html` Leader: <span class="leader-url">${leader.url}</span>, epoch ${leader.epoch}, since ${time(leader.since)}.` : ' No leader is known now: a change is under way.'}
  </p>`;
}

function Overview() {
  const { data, error } = usePolled(ROUTES.overview);
  const tms = usePolled(ROUTES.taskManagers).data?.taskmanagers ?? [];
  return html`<h1>Overview</h1>
    <${Problem} error=${error} />
    ${data &&
    html`<div class="cards">
      <div class="card">TaskManagers<b>${data.taskmanagers}</b></div>
      <div class="card">Slots free / total<b>${data.freeSlots} / ${data.slots}</b></div>
      ${Object.entries(data.jobs).map(([state, n]) => html`<div class="card">Jobs ${state}<b>${n}</b></div>`)}
    </div>
    <${Leadership} overview=${data} />`}
    <h2>TaskManagers</h2>
    <table>
      <tr><th>id</th><th>address</th><th class="n">slots</th><th class="n">free</th><th class="n">network memory</th><th>last heartbeat</th></tr>
      ${tms.map(
        (tm) => html`<tr>
          <td><a href=${`#/taskmanagers/${tm.id}`}>${tm.id}</a></td><td>${tm.host}:${tm.dataPort}</td>
          <td class="n">${tm.slots}</td><td class="n">${tm.freeSlots}</td><td class="n">${bytes(tm.memory)}</td><td>${time(tm.lastHeartbeat)}</td>
        </tr>`,
      )}
    </table>`;
}

function Jobs() {
  const { data, error } = usePolled(ROUTES.jobs);
  const jobs = [...(data?.jobs ?? [])].sort((a, b) => b.submitted - a.submitted);
  return html`<h1>Jobs</h1>
    <${Problem} error=${error} />
    <table class="jobs">
      <tr><th>id</th><th>name</th><th>state</th><th>submitted</th><th class="n">duration</th><th class="n">parallelism</th></tr>
      ${jobs.map(
        (job) => html`<tr data-job=${job.id}>
          <td><a href=${`#/jobs/${job.id}`}>${job.id}</a></td><td>${job.name}</td><td class=${`state ${job.state}`}>${job.state}</td>
          <td>${time(job.submitted)}</td><td class="n">${fmt(job.durationMs / 1000, 1)} s</td><td class="n">${job.parallelism}</td>
        </tr>`,
      )}
    </table>`;
}

/** A stage's colour: grey as it is backpressured, red as it is busy, pale when idle (as Flink's job graph). */
function stageColour(stage) {
  if (stage.backPressuredRatio > stage.busyRatio) return `hsl(0, 0%, ${Math.round(92 - 55 * stage.backPressuredRatio)}%)`;
  return `hsl(${Math.round(210 - 210 * stage.busyRatio)}, 70%, ${Math.round(88 - 30 * stage.busyRatio)}%)`;
}

/** Stages summed over their subtasks: the worst subtask speaks for the stage, as in Flink. */
function stagesOf(job) {
  const stages = new Map();
  for (const task of job.tasks) {
    const stage = stages.get(task.stage) ?? { name: task.stage, tasks: [], busyRatio: 0, backPressuredRatio: 0, idleRatio: 0, states: new Set() };
    stage.tasks.push(task);
    stage.busyRatio = Math.max(stage.busyRatio, task.busyRatio ?? 0);
    stage.backPressuredRatio = Math.max(stage.backPressuredRatio, task.backPressuredRatio ?? 0);
    stage.states.add(task.state);
    stages.set(task.stage, stage);
  }
  for (const stage of stages.values()) stage.backPressure = stage.backPressuredRatio <= 0.1 ? 'OK' : stage.backPressuredRatio <= 0.5 ? 'LOW' : 'HIGH';
  // An unbounded job's stages in event time: their watermark, and whether it is stuck.
  for (const time of job.stages ?? []) {
    const stage = stages.get(time.stage);
    if (stage) stage.time = time;
  }
  return [...stages.values()];
}

function edgeLabel(edge) {
  const b = edge.buffers;
  return [`${edge.type} · ${fmt(edge.recordsPerSecond)} rec/s · ${bytes(edge.bytesPerSecond)}/s`, `buffers: ${b.queued} queued, ${b.inFlight} in flight, ${b.atConsumers} at consumers, ${b.spilled} spilled`];
}

/** A stage's watermark as event time, how far it trails the clock, and whether it is stuck. */
function watermarkLabel(time) {
  if (time.watermark === null) return time.stuck ? 'watermark none yet · STUCK' : 'watermark none yet';
  const at = new Date(time.watermark).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '');
  return `watermark ${at} · lag ${fmt(time.lagMs / 1000, 1)} s${time.stuck ? ' · STUCK' : ''}`;
}

function StageGraph({ job }) {
  const stages = stagesOf(job);
  const graph = new dagre.graphlib.Graph({ multigraph: true });
  graph.setGraph({ rankdir: 'LR', nodesep: 40, ranksep: 260, marginx: 20, marginy: 20 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const stage of stages) graph.setNode(stage.name, { width: 240, height: 64, stage });
  job.edges.forEach((edge, i) => graph.setEdge(edge.from, edge.to, { edge, width: 250, height: 34, labelpos: 'c' }, String(i)));
  dagre.layout(graph);
  const { width, height } = graph.graph();
  // Drawn at its size where the window is wide enough, scaled down to the window's width where it is not.
  return html`<svg class="graph" viewBox=${`0 0 ${width} ${height}`} style=${`width: 100%; max-width: ${width}px; height: auto`}>
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555" /></marker></defs>
    ${graph.edges().map((e) => {
      const { points, x, y, edge } = graph.edge(e);
      const [line1, line2] = edgeLabel(edge);
      return html`<g class="edge" data-edge=${`${edge.from}->${edge.to}`} data-type=${edge.type} data-records-per-second=${edge.recordsPerSecond}>
        <path d=${`M${points.map((p) => `${p.x},${p.y}`).join(' L')}`} marker-end="url(#arrow)" />
        <text x=${x} y=${y - 4} text-anchor="middle">${line1}</text>
        <text x=${x} y=${y + 12} text-anchor="middle">${line2}</text>
      </g>`;
    })}
    ${graph.nodes().map((name) => {
      const { x, y, width: w, height: hh, stage } = graph.node(name);
      const time = stage.time;
      return html`<g class=${`stage${time?.stuck ? ' stuck' : ''}`} data-stage=${name} data-backpressure=${stage.backPressure} data-busy=${stage.busyRatio.toFixed(2)}
          data-watermark=${time?.watermark ?? ''} data-stuck=${time ? String(time.stuck) : ''} transform=${`translate(${x - w / 2},${y - hh / 2})`}>
        <rect width=${w} height=${hh} fill=${stageColour(stage)} />
        <text x="10" y="20" font-weight="600">${name} (${stage.tasks.length})</text>
        <text x="10" y="38">busy ${pct(stage.busyRatio)} · backpressured ${pct(stage.backPressuredRatio)}</text>
        <text x="10" y="55">${time ? watermarkLabel(time) : `backpressure ${stage.backPressure} · ${[...stage.states].join(', ')}`}</text>
      </g>`;
    })}
  </svg>`;
}

/** How many of a job's checkpoints its page lists, newest first. */
const RECENT_CHECKPOINTS = 20;

/** A job's checkpoints, as Flink's checkpoints tab: the counts, the latest completed, the recent ones. */
function Checkpoints({ id }) {
  const { data } = usePolled(ROUTES.checkpoints, { id });
  // A job that took none (most bounded jobs take none at all) gets no section.
  if (!data || (data.checkpoints.length === 0 && data.counts.completed + data.counts.failed + data.counts.inProgress === 0)) return null;
  const { counts, latest } = data;
  const recent = data.checkpoints.slice(-RECENT_CHECKPOINTS).reverse();
  return html`<h2>Checkpoints</h2>
    <p class="checkpoint-counts" data-completed=${counts.completed} data-failed=${counts.failed} data-in-progress=${counts.inProgress}>
      ${counts.completed} completed · ${counts.failed} failed or aborted · ${counts.inProgress} in progress
      ${latest && ` · latest completed #${latest.id}: ${bytes(latest.bytes)} in ${fmt(latest.durationMs)} ms, ${latest.unaligned ? 'unaligned' : 'aligned'}`}</p>
    ${recent.length > 0 &&
    html`<table class="checkpoints">
      <tr><th class="n">id</th><th>status</th><th>triggered</th><th class="n">duration</th><th class="n">size</th><th class="n">in flight</th><th>mode</th></tr>
      ${recent.map(
        (c) => html`<tr data-checkpoint=${c.id} data-status=${c.status} data-unaligned=${String(c.unaligned)}>
          <td class="n">${c.id}${c.savepoint ? ' (savepoint)' : ''}</td><td class=${`state ${c.status}`} title=${c.failure ?? ''}>${c.status}</td><td>${time(c.triggered)}</td>
          <td class="n">${c.durationMs === undefined ? '-' : `${fmt(c.durationMs)} ms`}</td><td class="n">${bytes(c.bytes)}</td><td class="n">${bytes(c.inFlightBytes)}</td>
          <td>${c.unaligned ? 'unaligned' : 'aligned'}</td>
        </tr>`,
      )}
    </table>`}`;
}

function JobPage({ id }) {
  const { data: job, error } = usePolled(ROUTES.job, { id });
  const [cancelError, setCancelError] = useState(null);
  if (!job) return html`<h1>Job ${id}</h1><${Problem} error=${error} />`;
  const cancel = () => api(ROUTES.cancel, { id }, {}).catch(setCancelError);
  const running = job.state === 'CREATED' || job.state === 'RUNNING';
  const failures = job.tasks.filter((t) => t.error);
  return html`<h1>Job ${job.name} <span class=${`state ${job.state}`} data-state=${job.state}>${job.state}</span></h1>
    <${Problem} error=${error ?? cancelError} />
    <p>${job.id} · parallelism ${job.parallelism} · ${job.exchange} · ${fmt(job.durationMs / 1000, 1)} s · ${pct(job.progress)} of tasks finished
      ${running && html` <button class="cancel" onClick=${cancel}>Cancel</button>`}</p>
    <p class="legend">Stages: <span style="background:hsl(210,70%,88%)">idle</span><span style="background:hsl(0,70%,58%)">busy</span><span style="background:hsl(0,0%,37%);color:#fff">backpressured</span></p>
    ${job.edges && html`<${StageGraph} job=${job} />`}
    ${job.sql && html`<h2>SQL</h2><pre class="sql-statement">${job.sql.statement}</pre><ol class="sql-plan">${job.sql.plan.map((step) => html`<li>${step}</li>`)}</ol>`}
    ${job.latency && html`<p class="latency">latency p50 ${fmt(job.latency.p50)} ms · p99 ${fmt(job.latency.p99)} ms${job.watermarkLatency ? ` · window results p99 ${fmt(job.watermarkLatency.p99)} ms` : ''}</p>`}
    <h2>Subtasks</h2>
    <table class="subtasks">
      <tr><th>task</th><th>state</th><th>taskmanager</th><th class="n">records in</th><th class="n">records out</th><th class="n">bytes in</th><th class="n">bytes out</th>
        <th class="n">busy</th><th class="n">backpressured</th><th class="n">idle</th><th>backpressure</th></tr>
      ${job.tasks.map(
        (t) => html`<tr>
          <td>${t.stage} #${t.subtask}</td><td class=${`state ${t.state}`}>${t.state}</td><td><a href=${`#/taskmanagers/${t.taskManager}`}>${t.taskManager}</a></td>
          <td class="n">${fmt(t.counters.recordsIn)}</td><td class="n">${fmt(t.counters.recordsOut)}</td><td class="n">${bytes(t.counters.bytesIn)}</td><td class="n">${bytes(t.counters.bytesOut)}</td>
          <td class="n">${pct(t.busyRatio)}</td><td class="n">${pct(t.backPressuredRatio)}</td><td class="n">${pct(t.idleRatio)}</td><td>${t.backPressure ?? '-'}</td>
        </tr>`,
      )}
    </table>
    <${Checkpoints} id=${id} />
    <h2>Exceptions</h2>
    ${job.error || failures.length > 0
      ? html`<div class="exceptions">${job.error && html`<p class="error">${job.error}</p>`}${failures.map((t) => html`<p class="error">${t.id}: ${t.error}</p>`)}</div>`
      : html`<p>None.</p>`}`;
}

/** A uPlot chart of series kept while the page shows. */
function Chart({ title, series, data }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    plot.current = new uPlot({ title, width: 640, height: 220, series: [{}, ...series.map((label, i) => ({ label, stroke: ['#1565c0', '#c62828', '#2e7d32'][i] }))] }, data, box.current);
    return () => plot.current.destroy();
  }, []);
  useEffect(() => plot.current?.setData(data), [data]);
  return html`<div ref=${box}></div>`;
}

function TaskManagerPage({ id }) {
  const { data, error } = usePolled(ROUTES.taskManager, { id });
  // Five minutes of samples: time, buffers used and total, output and input pool usage (%), RSS (MiB).
  const [history, setHistory] = useState([[], [], [], [], [], []]);
  useEffect(() => {
    const status = data?.status;
    if (!status || status.error) return;
    const sample = [Date.now() / 1000, status.segmentsInUse, status.totalSegments, status.poolUsage.output * 100, status.poolUsage.input * 100, status.rss / (1 << 20)];
    setHistory((series) => series.map((values, i) => [...values, sample[i]].slice(-300)));
  }, [data]);
  const status = data?.status ?? {};
  return html`<h1>TaskManager ${id}</h1>
    <${Problem} error=${error} />
    ${data &&
    html`<p>${data.host}:${data.dataPort} · ${data.slots} slots (${data.freeSlots} free) · network memory ${bytes(data.memory)} ·
      ${status.busyThreads ?? '-'} busy task threads · ${status.partitions?.length ?? '-'} partitions · ${status.spillFiles?.length ?? '-'} spill files</p>`}
    <h2>Network buffer pool</h2>
    <${Chart} title="network buffers" series=${['used', 'total']} data=${[history[0], history[1], history[2]]} />
    <${Chart} title="pool usage (%)" series=${['output pools', 'input pools']} data=${[history[0], history[3], history[4]]} />
    <h2>Memory</h2>
    <${Chart} title="resident memory (MiB)" series=${['RSS']} data=${[history[0], history[5]]} />`;
}

function Submit() {
  const overview = usePolled(ROUTES.overview).data;
  const [job, setJob] = useState('wordcount');
  const [params, setParams] = useState('{\n  "input": "corpus/"\n}');
  const [parallelism, setParallelism] = useState('');
  const [exchange, setExchange] = useState('pipelined');
  const [error, setError] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      const body = { job, params: JSON.parse(params || '{}'), exchange, ...(parallelism ? { parallelism: Number(parallelism) } : {}) };
      const { id } = await api(ROUTES.submit, {}, body);
      location.hash = `#/jobs/${id}`;
    } catch (failure) {
      setError(failure);
    }
  };
  return html`<h1>Submit a built-in job</h1>
    <${Problem} error=${error} />
    <form class="submit" onSubmit=${submit}>
      <label>Job</label>
      <select name="job" value=${job} onChange=${(e) => setJob(e.target.value)}>
        ${(overview?.builtinJobs ?? ['wordcount']).map((name) => html`<option value=${name}>${name}</option>`)}
      </select>
      <label>Params (JSON)</label>
      <textarea name="params" value=${params} onInput=${(e) => setParams(e.target.value)}></textarea>
      <label>Parallelism (default: every slot)</label>
      <input name="parallelism" type="number" min="1" value=${parallelism} onInput=${(e) => setParallelism(e.target.value)} />
      <label>Exchange</label>
      <select name="exchange" value=${exchange} onChange=${(e) => setExchange(e.target.value)}>
        <option value="pipelined">pipelined</option><option value="blocking">blocking</option>
      </select>
      <p><button type="submit">Submit</button></p>
    </form>`;
}

function App() {
  const route = useRoute();
  const [, page, id] = route.split('/');
  const content =
    page === 'jobs' && id ? html`<${JobPage} id=${decodeURIComponent(id)} />`
    : page === 'jobs' ? html`<${Jobs} />`
    : page === 'taskmanagers' && id ? html`<${TaskManagerPage} id=${decodeURIComponent(id)} />`
    : page === 'submit' ? html`<${Submit} />`
    : html`<${Overview} />`;
  const forget = () => {
    localStorage.removeItem(TOKEN_KEY);
    location.reload();
  };
  return html`<header>
      <a class="brand" href="#/">Spillway</a><a href="#/jobs">Jobs</a><a href="#/submit">Submit</a>
      ${localStorage.getItem(TOKEN_KEY) && html`<a class="token" href="#" onClick=${forget}>forget the token</a>`}
    </header>
    <main key=${route}>${content}</main>`;
}

render(html`<${App} />`, document.getElementById('app'));
