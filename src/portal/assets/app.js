// The TauGrid portal: every view reads the same /api/v1 the CLI uses.
// Status is always written in words (the colour dot only repeats it).
"use strict";

const main = document.getElementById("main");

async function api(path, options) {
  const res = await fetch("/api/v1" + path, Object.assign({ credentials: "same-origin" }, options || {}));
  if (res.status === 401) throw new Error("not signed in: open the address `tau portal` prints");
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = text; }
  if (!res.ok) throw new Error((body && body.message) || res.statusText);
  return body;
}

function esc(v) {
  return String(v == null ? "" : v).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function state(s) { return `<span class="state ${esc(s)}">${esc(s)}</span>`; }
function table(headers, rows) {
  return `<div class="table-wrap"><table><thead><tr>${headers.map(h => `<th>${esc(h)}</th>`).join("")}</tr></thead>` +
    `<tbody>${rows.map(r => `<tr>${r.map(c => `<td>${c}</td>`).join("")}</tr>`).join("")}</tbody></table></div>`;
}
function progress(job) {
  const p = job.progress;
  if (!p) return "-";
  let out = p.percent != null ? `${Math.round(p.percent)}%` : (p.step != null ? `step ${p.step}` : "-");
  if (p.eta_seconds != null && job.state === "Running") out += ` ETA ${Math.round(p.eta_seconds)}s`;
  if (p.stalled) out += " (stalled)";
  return esc(out);
}

async function overview() {
  const [info, queues, gpus] = await Promise.all([api("/info"), api("/queues"), api("/gpus")]);
  const count = s => (info.jobs && info.jobs[s]) || 0;
  // Drained or Unhealthy, as the server counts them: a Suspect GPU still takes work.
  const outOfService = gpus.out_of_service;
  main.innerHTML = `<h1>Overview</h1><div class="cards">` +
    [["Running", count("Running") + count("Admitted")], ["Pending", count("Queued")], ["Retrying", count("Retrying")],
     ["Failed", count("Failed")], ["GPUs", gpus.gpus.length], ["GPUs out of service", outOfService]]
      .map(([k, v]) => `<div class="card"><div class="n">${v}</div><div class="muted">${esc(k)}</div></div>`).join("") +
    `</div><h2>Queue pressure</h2>` +
    table(["ClusterQueue", "Pending", "Admitted"], queues.cluster_queues.map(q => [esc(q.name), q.pending, q.admitted])) +
    `<h2>GPUs</h2>` + gpuTable(gpus);
}

async function queuesView() {
  const q = await api("/queues");
  const rows = [];
  for (const cq of q.cluster_queues) {
    for (const r of cq.resources) {
      rows.push([esc(cq.name), esc(cq.cohort || "-"), esc(r.flavor), esc(r.resource), esc(r.nominal), esc(r.used), esc(r.borrowed),
                 cq.weighted_share == null ? "-" : esc(cq.weighted_share)]);
    }
  }
  const jobs = await api("/jobs?state=Queued");
  main.innerHTML = `<h1>Queues</h1>` +
    table(["ClusterQueue", "Cohort", "Flavor", "Resource", "Nominal", "Used", "Borrowed", "Share"], rows) +
    `<h2>Pending jobs</h2>` +
    table(["Job", "Queue", "Reason", "Message"], jobs.jobs.map(j => [
      `<a href="#/jobs/${esc(j.id)}">${esc(j.name)}</a>`, esc(j.queue), esc(j.reason), esc(j.message)]));
}

// One page of jobs, newest first; "Older jobs" follows the page's next token.
async function jobsView(params) {
  const filter = params.get("state") || "";
  const from = params.get("continue") || "";
  const query = new URLSearchParams();
  if (filter) query.set("state", filter);
  if (from) query.set("continue", from);
  const data = await api("/jobs" + (query.toString() ? "?" + query.toString() : ""));
  const states = ["", "Queued", "Running", "Retrying", "Succeeded", "Failed", "Cancelled"];
  const page = next => { const q = new URLSearchParams(); if (filter) q.set("state", filter); if (next) q.set("continue", next); return "#/jobs" + (q.toString() ? "?" + q.toString() : ""); };
  main.innerHTML = `<h1>Jobs</h1><div class="filters">` +
    states.map(s => `<a href="#/jobs${s ? "?state=" + s : ""}">${s || "All"}</a>`).join(" ") + `</div>` +
    table(["Job", "Name", "Queue", "State", "Reason", "Progress", "Created"], data.jobs.map(j => [
      `<a href="#/jobs/${esc(j.id)}">${esc(j.id)}</a>`, esc(j.name), esc(j.queue), state(j.state), esc(j.reason),
      progress(j), esc(j.created_at)])) +
    `<div class="pager">` + (from ? `<a href="${esc(page(""))}">Newest jobs</a> ` : "") +
    (data.next ? `<a id="older" href="${esc(page(data.next))}">Older jobs</a>` : "") + `</div>`;
}

function chart(points, key) {
  const xs = points.filter(p => typeof p[key] === "number");
  if (xs.length < 2) return "";
  const w = 600, h = 160, values = xs.map(p => p[key]);
  const lo = Math.min(...values), hi = Math.max(...values), span = hi - lo || 1;
  const path = xs.map((p, i) => `${(i / (xs.length - 1) * w).toFixed(1)},${(h - (p[key] - lo) / span * (h - 10) - 5).toFixed(1)}`);
  return `<h2>${esc(key)}</h2><svg class="chart" viewBox="0 0 ${w} ${h}" role="img" aria-label="${esc(key)} over steps">` +
    `<polyline fill="none" stroke="#2457c5" stroke-width="2" points="${path.join(" ")}"/></svg>` +
    `<div class="muted">${esc(key)}: ${lo} to ${hi} over ${xs.length} lines</div>`;
}

let logAbort = null;
async function jobView(id) {
  const job = await api(`/jobs/${encodeURIComponent(id)}`);
  const [metrics, evidence] = await Promise.all([
    api(`/jobs/${encodeURIComponent(id)}/metrics`).catch(() => ({ points: [] })),
    api(`/jobs/${encodeURIComponent(id)}/evidence`).catch(() => null)]);
  const keys = new Set();
  for (const p of metrics.points) for (const k of Object.keys(p)) if (!["step", "total_steps", "time"].includes(k)) keys.add(k);
  const ranks = job.log_ranks;
  main.innerHTML = `<h1>${esc(job.name)} <span class="muted">${esc(job.id)}</span></h1>` +
    `<p id="status">${state(job.state)} ${esc(job.reason)} <span class="muted">${esc(job.message)}</span></p>` +
    `<p><button id="cancel">Cancel</button><button id="resume">Resume</button></p>` +
    `<p>Progress: <span id="progress">${progress(job)}</span></p>` +
    `<h2>Attempts</h2>` + table(["#", "State", "Reason", "Exit", "Retry reason", "Resumed from", "Started", "Finished"],
      job.attempts.map(a => [a.number, state(a.state), esc(a.reason), esc(a.exit_code == null ? "-" : a.exit_code),
        esc(a.retry_reason || "-"), esc(a.resumed_from || "-"), esc(a.started_at || "-"), esc(a.finished_at || "-")])) +
    `<h2>Logs</h2><label>Rank <select id="rank">${["all", ...Array.from({ length: ranks }, (_, i) => i)]
      .map(r => `<option>${r}</option>`).join("")}</select></label> <label><input type="checkbox" id="follow" checked> follow</label>` +
    `<pre class="logs" id="logs"></pre>` +
    [...keys].map(k => chart(metrics.points, k)).join("") +
    `<h2>Checkpoints</h2>` + table(["Name", "Size", "Completed", "Digest"], job.checkpoints.map(c => [
      esc(c.name), esc(c.size_bytes), esc(c.completed_at), esc((c.digest || "").slice(0, 19))])) +
    `<h2>Evidence</h2>` + (evidence ? table(["Field", "Value"], [
      ["Spec", esc(evidence.spec_sha256)], ["Code", esc(evidence.code && evidence.code.snapshot)],
      ["Git", esc(evidence.git ? `${evidence.git.branch} ${evidence.git.commit}${evidence.git.dirty ? " (dirty)" : ""}` : "-")],
      ["Host", esc(evidence.host ? `${evidence.host.hostname} ${evidence.host.os}` : "-")],
      ["Sealed", esc(evidence.complete ? "yes" : "not yet")]]) : `<p class="muted">no evidence</p>`) +
    `<h2>Timeline</h2><div id="timeline"></div>`;
  document.getElementById("cancel").onclick = () => api(`/jobs/${encodeURIComponent(id)}/cancel`, { method: "POST", body: "{}" }).then(route, e => alert(e.message));
  document.getElementById("resume").onclick = () => api(`/jobs/${encodeURIComponent(id)}/resume`, { method: "POST", body: "{}" }).then(route, e => alert(e.message));
  const streamLogs = () => {
    if (logAbort) logAbort.abort();
    logAbort = new AbortController();
    const pre = document.getElementById("logs");
    pre.textContent = "";
    const rank = document.getElementById("rank").value;
    const follow = document.getElementById("follow").checked;
    fetch(`/api/v1/jobs/${encodeURIComponent(id)}/logs?attempt=all&rank=${rank}${follow ? "&follow=true" : ""}`,
          { signal: logAbort.signal, credentials: "same-origin" }).then(async res => {
      const reader = res.body.getReader(), dec = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pre.textContent += dec.decode(value, { stream: true });
        pre.scrollTop = pre.scrollHeight;
      }
    }).catch(() => {});
  };
  document.getElementById("rank").onchange = streamLogs;
  document.getElementById("follow").onchange = streamLogs;
  streamLogs();
  // State and progress stay live while the page is open.
  refresh = async () => {
    const j = await api(`/jobs/${encodeURIComponent(id)}`);
    const status = document.getElementById("status"), prog = document.getElementById("progress");
    if (!status || !prog) return;
    status.innerHTML = `${state(j.state)} ${esc(j.reason)} <span class="muted">${esc(j.message)}</span>`;
    prog.innerHTML = progress(j);
  };
  const events = await fetch(`/api/v1/jobs/${encodeURIComponent(id)}/events`, { credentials: "same-origin" }).then(r => r.text());
  document.getElementById("timeline").innerHTML = table(["Time", "Event", "Reason", "Message"],
    foldCheckpoints(events.split("\n").filter(Boolean).map(l => JSON.parse(l)))
      .map(e => [esc(e.at), esc(e.type), esc(e.reason), esc(e.message)]));
}

// Two or more Checkpoint events in one attempt (from its Admitted event)
// become one row where the last of them was, as in tau status.
function foldCheckpoints(events) {
  let attempt = 0;
  const groups = new Map(), of = events.map(e => {
    if (e.type === "Admitted") attempt++;
    if (e.type !== "Checkpoint") return null;
    if (!groups.has(attempt)) groups.set(attempt, []);
    groups.get(attempt).push(e);
    return attempt;
  });
  return events.flatMap((e, i) => {
    const g = of[i] === null ? null : groups.get(of[i]);
    if (!g || g.length < 2) return [e];
    if (g[g.length - 1] !== e) return [];
    const newest = (e.message || "").split(" ")[0];
    return [{ ...e, message: `${g.length} checkpoints, newest ${newest} (tau events --all lists each)` }];
  });
}

function gpuTable(g) {
  return table(["GPU", "UUID", "Model", "Health", "Reason", "Util", "Temp", "Job"], g.gpus.map(x => [
    x.index, esc(x.uuid), esc(x.model), state(x.health) + (x.drained ? " (drained)" : ""), esc(x.reason || "-"),
    esc(x.utilization_pct == null ? "-" : x.utilization_pct + "%"), esc(x.temperature_c == null ? "-" : x.temperature_c + " °C"),
    x.job ? `<a href="#/jobs/${esc(x.job.id)}">${esc(x.job.name)}</a>` : "-"]));
}

async function gpusView() {
  const g = await api("/gpus");
  main.innerHTML = `<h1>GPUs</h1>` + (g.gpus.length ? gpuTable(g) : `<p class="muted">No GPUs: a CPU-only machine.</p>`) +
    `<h2>Recent GPU events</h2>` + table(["Time", "GPU", "Event", "Reason", "Message"], g.events.slice().reverse().map(e => [
      esc(e.at), esc(e.uuid), esc(e.type), esc(e.reason), esc(e.message)]));
}

// What the current page re-reads every few seconds (lists re-render;
// the job page updates its state and progress).
let refresh = null;
setInterval(() => { if (refresh) refresh().catch(() => {}); }, 3000);

async function route() {
  if (logAbort) { logAbort.abort(); logAbort = null; }
  refresh = null;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  try {
    if (path === "/") { await overview(); refresh = overview; }
    else if (path === "/queues") { await queuesView(); refresh = queuesView; }
    else if (path === "/jobs") { await jobsView(params); refresh = () => jobsView(params); }
    else if (path.startsWith("/jobs/")) await jobView(decodeURIComponent(path.slice(6)));
    else if (path === "/gpus") { await gpusView(); refresh = gpusView; }
    else main.innerHTML = `<p>No such page.</p>`;
  } catch (e) {
    main.innerHTML = `<p role="alert">${esc(e.message)}</p>`;
  }
}

window.addEventListener("hashchange", route);
route();
