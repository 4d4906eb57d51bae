// botd web pages: log in from the link botd printed, and a chat room
// that posts text and files and shows messages as they arrive. Plain
// script, no build step; everything a sender wrote is inserted as text,
// never as HTML.
"use strict";

(function () {
  // Login: botd prints /login#token=…; the fragment never reaches a
  // server log. Fill the form, forget the fragment, submit.
  const form = document.getElementById("login-form");
  if (form) {
    const m = /^#(?:token|link)=(.+)$/.exec(location.hash);
    if (m) {
      history.replaceState(null, "", location.pathname);
      form.querySelector("input[type=password]").value = decodeURIComponent(m[1]);
      form.submit();
    }
    return;
  }

  // Rendered answers: code blocks get a copy button, links open in a new
  // tab without handing it this page.
  function enhance(root) {
    root.querySelectorAll(".rendered a[href]").forEach((a) => { a.target = "_blank"; a.rel = "noopener noreferrer"; });
    root.querySelectorAll(".rendered pre").forEach((pre) => {
      if (pre.querySelector(".copy")) return;
      const b = document.createElement("button");
      b.type = "button"; b.className = "copy"; b.textContent = "Copy";
      b.setAttribute("aria-label", "Copy code");
      b.addEventListener("click", async () => {
        const code = pre.querySelector("code") || pre;
        try { await navigator.clipboard.writeText(code.innerText); b.textContent = "Copied"; }
        catch (_) { b.textContent = "Select and copy"; }
        setTimeout(() => { b.textContent = "Copy"; }, 1500);
      });
      pre.append(b);
    });
  }

  // The dashboard refreshes its changing parts every 10 s from
  // /admin/live, without reloading (forms and scroll stay as they are).
  function dashboard() {
    const main = document.getElementById("dashboard");
    const note = document.getElementById("refreshed");
    async function refresh() {
      try {
        const res = await fetch(main.dataset.liveUrl, { credentials: "same-origin", headers: { "Accept": "text/html" } });
        if (!res.ok) { note.textContent = "not updated: " + res.status + " " + res.statusText; return; }
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        doc.querySelectorAll("[data-refresh][id]").forEach((fresh) => {
          const old = document.getElementById(fresh.id);
          if (old) old.replaceWith(document.adoptNode(fresh));
        });
        main.dataset.refreshes = String(Number(main.dataset.refreshes || 0) + 1);
        note.textContent = "updated " + new Date().toLocaleTimeString();
      } catch (err) {
        note.textContent = "not updated: " + err.message;
      }
    }
    setInterval(refresh, Number(main.dataset.every || 10000));
  }
  if (document.getElementById("dashboard")) { dashboard(); return; }
  if (document.getElementById("run")) { return; }

  const chat = document.getElementById("chat");
  if (!chat) return;
  const room = chat.dataset.room;
  const csrf = chat.dataset.csrf;
  const maxUpload = Number(chat.dataset.maxUpload);
  const list = document.getElementById("messages");
  const composer = document.getElementById("composer");
  const text = document.getElementById("text");
  const nameInput = document.getElementById("name");
  const fileInput = document.getElementById("file");
  const attachBtn = document.getElementById("attach");
  const pendingList = document.getElementById("pending");
  const status = document.getElementById("status");
  const typing = document.getElementById("typing");
  const stopBtn = document.getElementById("stop");
  const conn = document.getElementById("conn");
  const progress = document.getElementById("progress");
  const drop = document.getElementById("drop");
  let lastSeq = Number(chat.dataset.lastSeq) || 0;
  let pending = [];

  // The admin's name is remembered by the browser; a guest's is asked
  // once and then fixed by botd for the visit (no input any more).
  const guestAsk = nameInput && nameInput.dataset.ask === "true";
  if (nameInput && !guestAsk) {
    nameInput.value = localStorage.getItem("botd.name") || "";
    nameInput.addEventListener("change", () => localStorage.setItem("botd.name", nameInput.value.trim()));
  }

  // claimName fixes a guest's name before their first message; botd
  // refuses one that is taken or reserved, and says why.
  async function claimName() {
    const name = nameInput.value.trim();
    if (!name) { status.textContent = "Type your name first: the room shows it with your messages."; nameInput.focus(); return false; }
    const res = await fetch("/r/" + encodeURIComponent(room) + "/name", {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, "Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ name: name }),
    });
    let out = {};
    try { out = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) { status.textContent = out.error || ("Name not set: " + res.status); nameInput.focus(); return false; }
    const you = el("span", "you", "You are ");
    you.id = "you";
    you.append(el("b", "", out.name));
    const row = nameInput.parentElement;
    row.replaceChildren(you);
    return true;
  }

  // Day separators: "Today", "Yesterday", or the date, before the first
  // message of each day, in the reader's time zone.
  function dayOf(iso) { const d = new Date(iso); return isNaN(d) ? "" : d.toDateString(); }
  function dayLabel(iso) {
    const d = new Date(iso), now = new Date();
    const y = new Date(now); y.setDate(now.getDate() - 1);
    if (d.toDateString() === now.toDateString()) return "Today";
    if (d.toDateString() === y.toDateString()) return "Yesterday";
    return d.toLocaleDateString(undefined, { weekday: "long", month: "long", day: "numeric",
      year: d.getFullYear() === now.getFullYear() ? undefined : "numeric" });
  }
  function separator(iso) {
    const li = el("li", "day", dayLabel(iso));
    li.setAttribute("role", "separator");
    li.dataset.day = dayOf(iso);
    return li;
  }
  function lastDay() {
    const msgs = list.querySelectorAll(".msg:not(.draft) time[datetime]");
    return msgs.length ? dayOf(msgs[msgs.length - 1].getAttribute("datetime")) : "";
  }
  (function separateDays() {
    let day = "";
    list.querySelectorAll(".msg").forEach((li) => {
      const t = li.querySelector("time[datetime]");
      if (!t) return;
      const d = dayOf(t.getAttribute("datetime"));
      if (d && d !== day) { li.before(separator(t.getAttribute("datetime"))); day = d; }
    });
  })();

  function el(tag, cls, txt) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== undefined) e.textContent = txt;
    return e;
  }

  function fmtSize(n) {
    if (n < 1024) return n + "B";
    if (n < 1024 * 1024) return Math.round(n / 1024) + "KB";
    return (n / 1024 / 1024).toFixed(1) + "MB";
  }

  function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }

  function brokenImages(root) {
    root.querySelectorAll(".file img").forEach((img) => {
      img.addEventListener("error", () => {
        img.replaceWith(el("span", "gone", "(no longer kept)"));
      }, { once: true });
    });
  }
  brokenImages(list);
  enhance(list);
  {
    // The newest answer's run may not have been recorded when the page was made.
    const answers = list.querySelectorAll(".msg.assistant:not(.draft)");
    const last = answers[answers.length - 1];
    if (last && !last.querySelector(".tools")) setTimeout(() => fetchChips(last.dataset.seq, 0), 0);
  }

  // The Stop button shows while the assistant works or writes.
  function working() {
    stopBtn.hidden = typing.hidden && !list.querySelector(".msg.draft");
  }

  // body fills a message's text: the server's rendered HTML for an
  // assistant (sanitised there), anything else as plain text.
  function body(li, html, txt) {
    if (html) {
      const d = el("div", "text rendered");
      d.innerHTML = html;
      li.append(d);
    } else if (txt) {
      li.append(el("div", "text", txt));
    }
  }

  // Tool chips: what the assistant did for an answer, each opening its
  // details. Built as text, like everything a page inserts.
  function chipsEl(tools) {
    const box = el("div", "tools");
    for (const t of tools) {
      const d = el("details", "tool-chip" + (t.failed ? " failed" : ""));
      d.append(el("summary", "", t.label));
      const detail = el("div", "tool-detail");
      const head = el("div");
      head.append(el("b", "", t.tool), " ", el("code", "", t.args || ""));
      detail.append(head);
      if (t.result) detail.append(el("div", "tool-result", t.result));
      if (t.run) { const a = el("a", "", "the whole run"); a.href = t.run; detail.append(a); }
      d.append(detail);
      box.append(d);
    }
    return box;
  }
  function addChips(li, tools) {
    if (!li || !tools || !tools.length || li.querySelector(".tools")) return;
    li.querySelector(".meta").after(chipsEl(tools));
  }
  // An answer arrives before its run is recorded: ask for its chips
  // until botd has them (a few times, further apart).
  function fetchChips(seq, attempt) {
    fetch("/r/" + encodeURIComponent(room) + "/tools?seq=" + seq, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then((res) => res.ok ? res.json() : Promise.reject(new Error(res.status)))
      .then((out) => {
        for (const [s, tools] of Object.entries(out.chips || {})) addChips(document.getElementById("m" + s), tools);
        if (out.pending && attempt < 6) setTimeout(() => fetchChips(seq, attempt + 1), 500 * Math.pow(2, attempt));
      })
      .catch(() => { if (attempt < 6) setTimeout(() => fetchChips(seq, attempt + 1), 500 * Math.pow(2, attempt)); });
  }

  function render(m) {
    if (document.getElementById("m" + m.seq)) return;
    const li = el("li", "msg" + (m.assistant ? " assistant" : "") + (m.system ? " system" : ""));
    li.id = "m" + m.seq;
    li.dataset.seq = m.seq;
    li.dataset.id = m.id;
    const meta = el("div", "meta");
    const when = el("time", "", m.clock);
    if (m.time) when.setAttribute("datetime", m.time);
    meta.append(el("span", "from", m.from), " ", when);
    li.append(meta);
    if (m.tools) li.append(chipsEl(m.tools));
    body(li, m.html, m.text);
    if (m.note) li.append(el("div", "note", m.note));
    for (const f of m.files || []) {
      const box = el("div", "file");
      if (f.image) {
        const a = el("a");
        a.href = f.url; a.target = "_blank"; a.rel = "noopener";
        const img = el("img");
        img.src = f.url; img.alt = f.name;
        a.append(img);
        box.append(a);
      } else if (f.inline) {
        const media = el(f.mime.startsWith("audio") ? "audio" : "video");
        media.controls = true; media.src = f.url; media.preload = "metadata";
        box.append(media);
      }
      const dl = el("a", "download", f.name);
      dl.href = f.url; dl.download = f.name;
      box.append(dl, " ", el("span", "size", f.size_text));
      li.append(box);
    }
    brokenImages(li);
    enhance(li);
    const empty = document.getElementById("empty-room");
    if (empty) empty.remove();
    if (m.time && dayOf(m.time) !== lastDay()) {
      const sep = separator(m.time);
      const draft = document.getElementById("d" + m.id);
      if (draft) draft.before(sep); else list.append(sep);
    }
    // A finished answer takes its draft's place.
    const d = document.getElementById("d" + m.id);
    if (d) d.replaceWith(li); else list.append(li);
    if (m.assistant && !m.tools) fetchChips(m.seq, 0);
    working();
    scrollDown();
  }

  function showDraft(d) {
    const empty = document.getElementById("empty-room");
    if (empty) empty.remove();
    let li = document.getElementById("d" + d.id);
    if (!li) {
      li = el("li", "msg assistant draft");
      li.id = "d" + d.id;
      li.setAttribute("aria-busy", "true");
      const meta = el("div", "meta");
      meta.append(el("span", "from", d.from), " ", el("span", "writing", "writing…"));
      li.append(meta, el("div", "text rendered"));
      list.append(li);
    }
    li.querySelector(".text").innerHTML = d.html;
    enhance(li);
    working();
    scrollDown();
  }

  // The assistant's reaction on a message (👀 while it works on it).
  function showReaction(r) {
    const li = list.querySelector('li[data-id="' + CSS.escape(r.id) + '"]');
    if (!li) return;
    let span = li.querySelector(".meta .reaction");
    if (!r.emoji) { if (span) span.remove(); return; }
    if (!span) { span = el("span", "reaction"); li.querySelector(".meta").append(" ", span); }
    span.textContent = r.emoji;
    span.title = "seen by the assistant";
  }

  function setConn(state, label) { conn.dataset.state = state; conn.textContent = label; chat.dataset.live = state === "live" ? "true" : "false"; }

  // The browser reconnects by itself (with Last-Event-ID) after a
  // dropped stream; a stream the server refused (an expired session, too
  // many tabs) is closed for good, so it is opened again here, later.
  let es = null, retry = 1000;
  function connect() {
    setConn("connecting", "connecting…");
    es = new EventSource("/r/" + encodeURIComponent(room) + "/events?after=" + lastSeq);
    es.addEventListener("message", (e) => {
      const m = JSON.parse(e.data);
      lastSeq = Math.max(lastSeq, m.seq);
      if (m.assistant) typing.hidden = true;
      render(m);
    });
    es.addEventListener("typing", (e) => { typing.hidden = !JSON.parse(e.data).on; working(); });
    es.addEventListener("draft", (e) => showDraft(JSON.parse(e.data)));
    es.addEventListener("reaction", (e) => showReaction(JSON.parse(e.data)));
    es.addEventListener("draft_end", (e) => {
      const li = document.getElementById("d" + JSON.parse(e.data).id);
      if (li) li.remove();
      working();
    });
    es.addEventListener("drafts", (e) => {
      const live = new Set(JSON.parse(e.data).map((id) => "d" + id));
      list.querySelectorAll(".msg.draft").forEach((li) => { if (!live.has(li.id)) li.remove(); });
      working();
    });
    es.addEventListener("open", () => { retry = 1000; setConn("live", "connected"); });
    es.addEventListener("error", () => {
      if (es.readyState === EventSource.CLOSED) {
        setConn("offline", "offline — reconnecting in " + Math.round(retry / 1000) + " s");
        setTimeout(connect, retry);
        retry = Math.min(retry * 2, 30000);
      } else {
        setConn("reconnecting", "reconnecting…");
      }
    });
  }
  window.addEventListener("online", () => { if (es && es.readyState === EventSource.CLOSED) connect(); });

  stopBtn.addEventListener("click", async () => {
    stopBtn.disabled = true;
    try {
      const res = await fetch("/r/" + encodeURIComponent(room) + "/stop", {
        method: "POST", headers: { "X-CSRF-Token": csrf, "Accept": "application/json" }, credentials: "same-origin",
      });
      let out = {};
      try { out = await res.json(); } catch (_) { /* not JSON */ }
      status.textContent = res.ok && out.stopped ? "" : (out.error || ("Not stopped: " + res.status));
    } catch (err) {
      status.textContent = "Not stopped: " + err;
    } finally {
      stopBtn.disabled = false;
    }
  });

  function total() { return pending.reduce((n, f) => n + f.size, 0); }

  function showPending() {
    pendingList.replaceChildren();
    pending.forEach((f, i) => {
      const li = el("li", "chip");
      if (f.type.startsWith("image/")) {
        const img = el("img");
        img.src = URL.createObjectURL(f);
        img.alt = "";
        img.onload = () => URL.revokeObjectURL(img.src);
        li.append(img);
      }
      li.append(el("span", "", f.name + " (" + fmtSize(f.size) + ")"));
      const x = el("button", "remove", "×");
      x.type = "button";
      x.title = "Remove";
      x.setAttribute("aria-label", "Remove " + f.name);
      x.addEventListener("click", () => { pending.splice(i, 1); showPending(); });
      li.append(x);
      pendingList.append(li);
    });
    status.textContent = total() > maxUpload ? "Too large: the files of one message may have " + fmtSize(maxUpload) +
      " together; these have " + fmtSize(total()) + ". Remove some." : "";
  }

  function attach(files) {
    for (const f of files) pending.push(f);
    showPending();
  }

  attachBtn.addEventListener("click", () => fileInput.click());
  fileInput.addEventListener("change", () => { attach(fileInput.files); fileInput.value = ""; });
  text.addEventListener("paste", (e) => {
    const files = Array.from(e.clipboardData ? e.clipboardData.files : []);
    if (files.length) { e.preventDefault(); attach(files); }
  });
  let depth = 0;
  document.addEventListener("dragenter", (e) => { e.preventDefault(); depth++; drop.hidden = false; });
  document.addEventListener("dragleave", () => { if (--depth <= 0) { depth = 0; drop.hidden = true; } });
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => {
    e.preventDefault(); depth = 0; drop.hidden = true;
    if (e.dataTransfer && e.dataTransfer.files.length) attach(e.dataTransfer.files);
  });

  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); composer.requestSubmit(); }
  });

  // send posts the form with XMLHttpRequest, the one browser API that
  // reports upload progress.
  function send(form) {
    return new Promise((resolve, reject) => {
      const x = new XMLHttpRequest();
      x.open("POST", composer.getAttribute("action").split("?")[0]);
      x.setRequestHeader("X-CSRF-Token", csrf);
      x.setRequestHeader("Accept", "application/json");
      x.upload.addEventListener("progress", (e) => {
        if (!e.lengthComputable) return;
        const pct = Math.round(100 * e.loaded / e.total);
        progress.value = pct; progress.textContent = pct + "%";
        status.textContent = "Uploading… " + pct + "%";
      });
      x.addEventListener("load", () => {
        let out = {};
        try { out = JSON.parse(x.responseText); } catch (_) { /* not JSON */ }
        resolve({ ok: x.status >= 200 && x.status < 300, status: x.status, error: out.error });
      });
      x.addEventListener("error", () => reject(new Error("the connection to botd failed")));
      x.send(form);
    });
  }

  composer.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!text.value.trim() && pending.length === 0) return;
    if (total() > maxUpload) { showPending(); return; }
    if (guestAsk && document.getElementById("name") && !(await claimName())) return;
    if (nameInput && !guestAsk) localStorage.setItem("botd.name", nameInput.value.trim());
    const form = new FormData();
    form.append("name", nameInput && !guestAsk ? nameInput.value : "");
    form.append("text", text.value);
    for (const f of pending) form.append("file", f, f.name);
    progress.hidden = pending.length === 0; progress.value = 0;
    status.textContent = pending.length ? "Uploading…" : "";
    const sendBtn = document.getElementById("send");
    sendBtn.disabled = true;
    try {
      const res = await send(form);
      if (!res.ok) {
        status.textContent = res.error || ("Not sent: " + res.status);
        return;
      }
      text.value = ""; pending = []; showPending(); status.textContent = "";
    } catch (err) {
      status.textContent = "Not sent: " + err.message;
    } finally {
      sendBtn.disabled = false;
      progress.hidden = true;
      text.focus();
    }
  });

  scrollDown();
  connect();
})();
