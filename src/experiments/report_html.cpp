// report.html: one self-contained page (no network): the report's data as JSON, Apache ECharts
// inlined from the binary, and a small script that draws seed 004's figures, the loss curves and
// time to target with it (hover values, legends that toggle series, zoom). The page records
// script errors and each chart's rendered-element count (ECharts' own display list) into the DOM,
// which the headless-Chromium test reads.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "experiments/embedded_charts.h"
#include "experiments/report.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json spread_json(const Spread& s) {
  return {{"n", s.n}, {"mean", s.n ? num(s.mean) : nlohmann::json()}, {"std", num(s.std)}};
}

nlohmann::json report_json(const ReportData& d) {
  nlohmann::json j;
  j["out_dir"] = d.out_dir;
  j["single_run"] = d.single_run;
  j["target_loss"] = d.target_loss;
  j["models"] = d.models;
  j["optims"] = d.optims;
  j["cells"] = nlohmann::json::array();
  for (const auto& o : d.optims) {
    for (const auto& m : d.models) {
      auto it = d.cells.find({m, o});
      if (it == d.cells.end()) continue;
      const CellStats& c = it->second;
      j["cells"].push_back({{"model", m},
                            {"optim", o},
                            {"runs", c.runs},
                            {"failed", c.failed},
                            {"reached", c.reached_target},
                            {"memory", spread_json(c.memory_mib)},
                            {"rss", spread_json(c.rss_mib)},
                            {"time", spread_json(c.time_s)},
                            {"ms", spread_json(c.ms_per_iter)},
                            {"train_loss", spread_json(c.train_loss)},
                            {"loss", spread_json(c.val_loss)},
                            {"target", spread_json(c.target_s)}});
    }
  }
  for (const auto& metric : figure_metrics()) {
    nlohmann::json f4, f5;
    for (size_t mi = 0; mi < d.models.size(); ++mi) {
      nlohmann::json a = nlohmann::json::array(), b = nlohmann::json::array();
      for (size_t oi = 0; oi < d.optims.size(); ++oi) {
        a.push_back(num(percent_change(d, d.models[mi], d.optims[oi], metric)));
        if (mi > 0 && oi > 0) {
          b.push_back(num(additivity_deviation(d, d.models[mi], d.optims[oi], metric)));
        }
      }
      f4[d.models[mi]] = a;
      if (mi > 0) f5[d.models[mi]] = b;
    }
    j["fig4"][metric] = f4;
    j["fig5"][metric] = f5;
  }
  j["runs"] = nlohmann::json::array();
  for (const ReportRun& r : d.runs) {
    nlohmann::json steps = nlohmann::json::array(), evals = nlohmann::json::array();
    for (const StepRecord& s : r.curves.steps) {
      steps.push_back({s.iter, num(s.loss), s.elapsed_s >= 0 ? num(s.elapsed_s) : nullptr});
    }
    for (const EvalRecord& e : r.curves.evals) {
      evals.push_back({e.iter, num(e.train_loss), num(e.val_loss),
                       e.elapsed_s >= 0 ? num(e.elapsed_s) : nullptr});
    }
    j["runs"].push_back({{"name", r.name},
                         {"model", r.model},
                         {"optim", r.optim},
                         {"seed", r.seed},
                         {"status", r.status},
                         {"error", r.error},
                         {"val_loss", num(r.summary.val_loss)},
                         {"target_iter", r.summary.target_iter},
                         {"target_s", num(r.summary.target_s)},
                         {"steps", steps},
                         {"evals", evals}});
  }
  return j;
}

// Text safe inside an HTML <script> element.
std::string script_safe(std::string text) {
  size_t pos = 0;
  while ((pos = text.find("</", pos)) != std::string::npos) {
    text.replace(pos, 2, "<\\/");
    pos += 3;
  }
  return text;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Records script errors into the page before anything else runs.
constexpr const char* kErrorCapture = R"JS(
window.__reportErrors = [];
(function () {
  function flush() {
    var el = document.getElementById('report-errors');
    if (el) el.textContent = window.__reportErrors.join('\n');
    if (document.body) document.body.setAttribute('data-errors', String(window.__reportErrors.length));
  }
  window.addEventListener('error', function (e) { window.__reportErrors.push('error: ' + e.message); flush(); });
  var original = console.error;
  console.error = function () {
    window.__reportErrors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    flush();
    original.apply(console, arguments);
  };
  window.__flushReportErrors = flush;
})();
)JS";

// Draws every chart from the JSON data with ECharts.
constexpr const char* kPageScript = R"JS(
(function () {
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var charts = [];
  function fmt(v, d) { return v === null || v === undefined ? '-' : Number(v).toFixed(d); }
  function pm(s, d) { return !s || !s.n ? '-' : (s.n > 1 ? fmt(s.mean, d) + ' ± ' + fmt(s.std, d) : fmt(s.mean, d)); }
  function container(parent, id, title, note) {
    var box = document.createElement('div');
    box.className = 'chart-box';
    var h = document.createElement('h3'); h.textContent = title; box.appendChild(h);
    if (note) { var p = document.createElement('p'); p.className = 'note'; p.textContent = note; box.appendChild(p); }
    var el = document.createElement('div'); el.className = 'chart'; el.id = id;
    box.appendChild(el);
    document.getElementById(parent).appendChild(box);
    return el;
  }
  function base(extra) {
    var o = {
      animation: false,
      tooltip: { trigger: 'axis', confine: true },
      legend: { type: 'scroll', top: 0 },
      grid: { left: 60, right: 30, top: 40, bottom: 60 },
      toolbox: { right: 10, bottom: 0, feature: { dataZoom: {}, restore: {}, saveAsImage: {} } }
    };
    for (var k in extra) o[k] = extra[k];
    return o;
  }
  function draw(el, option) {
    var chart = echarts.init(el, null, { renderer: 'svg' });
    chart.setOption(option);
    var count = 0;
    try { count = chart.getZr().storage.getDisplayList(true).length; } catch (e) { count = el.querySelectorAll('path').length; }
    el.setAttribute('data-rendered-elements', String(count));
    charts.push(chart);
    return chart;
  }
  function targetLine() {
    if (!(data.target_loss > 0)) return undefined;
    return { silent: true, symbol: 'none', lineStyle: { type: 'dashed', color: '#c00' },
             label: { formatter: 'target ' + data.target_loss }, data: [{ yAxis: data.target_loss }] };
  }
  function barFigure(parent, id, title, note, categories, seriesByName, unit) {
    var series = [];
    Object.keys(seriesByName).forEach(function (name) {
      series.push({ name: name, type: 'bar', data: seriesByName[name] });
    });
    draw(container(parent, id, title, note), base({
      tooltip: { trigger: 'axis', confine: true, valueFormatter: function (v) { return v === null || v === undefined ? 'n/a' : Number(v).toFixed(1) + unit; } },
      xAxis: { type: 'category', data: categories, axisLabel: { interval: 0, rotate: categories.length > 4 ? 20 : 0 } },
      yAxis: { type: 'value', name: unit === '%' ? 'percent' : unit, axisLabel: { formatter: '{value}' + (unit === '%' ? '%' : '') } },
      dataZoom: [{ type: 'inside' }],
      series: series
    }));
  }
  function curveChart(parent, id, title, runs, useTime, what) {
    var series = [];
    runs.forEach(function (r) {
      if (what !== 'val') {
        series.push({ name: r.name + ' train (step)', type: 'line', showSymbol: false, sampling: 'lttb',
          data: r.steps.filter(function (s) { return !useTime || s[2] !== null; })
                       .map(function (s) { return [useTime ? s[2] : s[0], s[1]]; }) });
        series.push({ name: r.name + ' train (eval)', type: 'line',
          data: r.evals.filter(function (e) { return !useTime || e[3] !== null; })
                       .map(function (e) { return [useTime ? e[3] : e[0], e[1]]; }) });
      }
      series.push({ name: r.name + (what === 'val' ? '' : ' val'), type: 'line',
        data: r.evals.filter(function (e) { return !useTime || e[3] !== null; })
                     .map(function (e) { return [useTime ? e[3] : e[0], e[2]]; }) });
    });
    if (series.length) series[0].markLine = targetLine();
    return draw(container(parent, id, title), base({
      xAxis: { type: 'value', name: useTime ? 'seconds' : 'iteration', nameLocation: 'middle', nameGap: 28 },
      yAxis: { type: 'value', name: 'loss', scale: true },
      dataZoom: [{ type: 'inside' }, { type: 'slider', height: 16, bottom: 28 }],
      grid: { left: 60, right: 30, top: 40, bottom: 80 },
      series: series
    }));
  }

  // Table 1.
  if (!data.single_run) {
    var rows = '<tr><th>optimization</th><th>model</th><th>n</th><th>peak memory (MiB, tracked)</th><th>peak RSS (MiB)</th><th>training time (s)</th><th>ms/iter</th><th>final train loss</th><th>final val loss</th></tr>';
    data.cells.forEach(function (c) {
      rows += '<tr><td>' + c.optim + '</td><td>' + c.model + '</td><td>' + c.loss.n + (c.failed ? ' (' + c.failed + ' failed)' : '') +
        '</td><td>' + pm(c.memory, 1) + '</td><td>' + pm(c.rss, 1) + '</td><td>' + pm(c.time, 1) + '</td><td>' + pm(c.ms, 1) +
        '</td><td>' + pm(c.train_loss, 4) + '</td><td>' + pm(c.loss, 4) + '</td></tr>';
    });
    document.getElementById('table1').innerHTML = rows;

    var names = { memory: 'peak memory', time: 'training time', loss: 'final val loss' };
    ['memory', 'time', 'loss'].forEach(function (m) {
      barFigure('fig4', 'fig4-' + m, 'Figure 4: ' + names[m] + ', % change against ' + data.models[0] + ' / ' + data.optims[0],
                'bars: model variations; groups: optimizations', data.optims, data.fig4[m], '%');
    });
    if (data.models.length > 1 && data.optims.length > 1) {
      ['memory', 'time', 'loss'].forEach(function (m) {
        barFigure('fig5', 'fig5-' + m, 'Figure 5: ' + names[m] + ', deviation from additivity',
                  'change of both together minus the sum of each alone (percentage points)', data.optims.slice(1), data.fig5[m], '%');
      });
    }
    var cats = [], reached = [], seconds = [];
    data.cells.forEach(function (c) {
      cats.push(c.model + ' / ' + c.optim);
      seconds.push(c.target.n ? c.target.mean : null);
      reached.push(c.reached + '/' + c.loss.n);
    });
    draw(container('target', 'target-time', 'Time to val loss ' + (data.target_loss > 0 ? data.target_loss : '(no target set)'),
                   'mean over the seeds that reached it (n shown on hover); missing bar: never reached'), base({
      tooltip: { trigger: 'axis', confine: true, formatter: function (p) {
        var i = p[0].dataIndex; return cats[i] + '<br>' + (seconds[i] === null ? 'not reached' : Number(seconds[i]).toFixed(1) + ' s') + ' (' + reached[i] + ' runs reached)'; } },
      xAxis: { type: 'category', data: cats, axisLabel: { interval: 0, rotate: 30 } },
      yAxis: { type: 'value', name: 'seconds' },
      grid: { left: 60, right: 30, top: 40, bottom: 110 },
      dataZoom: [{ type: 'inside' }],
      series: [{ name: 'time to target (s)', type: 'bar', data: seconds }]
    }));
    var withEvals = data.runs.filter(function (r) { return r.evals.length > 0; });
    curveChart('curves', 'all-val-iter', 'Val loss of every run against iterations', withEvals, false, 'val');
    curveChart('curves', 'all-val-time', 'Val loss of every run against wall time', withEvals, true, 'val');
  }

  // One run's curves, chosen from a list.
  var select = document.getElementById('run-select');
  data.runs.forEach(function (r, i) {
    var opt = document.createElement('option'); opt.value = String(i);
    opt.textContent = r.name + ' (' + r.status + ')'; select.appendChild(opt);
  });
  var runIter = null, runTime = null;
  function showRun(i) {
    var r = data.runs[i];
    var el1 = document.getElementById('run-iter'), el2 = document.getElementById('run-time');
    if (runIter) { runIter.dispose(); charts.splice(charts.indexOf(runIter), 1); el1.parentNode.parentNode.removeChild(el1.parentNode); }
    if (runTime) { runTime.dispose(); charts.splice(charts.indexOf(runTime), 1); el2.parentNode.parentNode.removeChild(el2.parentNode); }
    runIter = curveChart('run', 'run-iter', r.name + ': loss against iterations', [r], false, 'all');
    runTime = curveChart('run', 'run-time', r.name + ': loss against wall time', [r], true, 'all');
    document.getElementById('run-error').textContent = r.error ? 'error: ' + r.error : '';
    countCharts();
  }
  function countCharts() {
    var boxes = document.querySelectorAll('.chart');
    var drawn = 0;
    boxes.forEach(function (b) { if (Number(b.getAttribute('data-rendered-elements') || 0) > 0) drawn++; });
    document.body.setAttribute('data-charts-expected', String(boxes.length));
    document.body.setAttribute('data-charts-drawn', String(drawn));
  }
  select.addEventListener('change', function () { showRun(Number(select.value)); });
  if (data.runs.length) showRun(0);
  countCharts();
  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
  document.body.setAttribute('data-report-ready', '1');
  window.__flushReportErrors();
})();
)JS";

constexpr const char* kStyle = R"CSS(
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 24px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td:first-child, td:nth-child(2) { text-align: left; }
.chart { width: 100%; height: 380px; }
.chart-box { margin-bottom: 28px; }
.note { color: #666; font-size: 13px; margin: 0; }
#report-errors { color: #c00; }
.warning { background: #fff3cd; padding: 8px; }
)CSS";

}  // namespace

bool report_has_charts() { return !embedded_echarts_js().empty(); }

std::string report_html(const ReportData& d) {
  const std::string json = script_safe(report_json(d).dump());
  std::string body;
  body += fmt::format("<h1>nanogpt report: {}</h1>\n", html_escape(d.out_dir));
  if (!report_has_charts()) {
    body += "<p class=\"warning\">This nanogpt was built without its chart library, so this page "
            "has no charts. Run scripts/setup.sh (it installs the npm package echarts) and rebuild; "
            "report.md has the tables.</p>\n";
  }
  if (!d.single_run) {
    body += "<p>Values are mean ± sample standard deviation over seeds. Hover a chart for values, "
            "click legend entries to hide series, drag or scroll to zoom.</p>\n"
            "<h2>Table 1: memory, time and final loss</h2><table id=\"table1\"></table>\n"
            "<h2>Figure 4: percent change against the default</h2><div id=\"fig4\"></div>\n"
            "<h2>Figure 5: deviation from additivity</h2><div id=\"fig5\"></div>\n"
            "<h2>Time to target loss</h2><div id=\"target\"></div>\n"
            "<h2>Loss curves</h2><div id=\"curves\"></div>\n";
  }
  body += "<h2>Loss curves of one run</h2><p>run: <select id=\"run-select\"></select> "
          "<span id=\"run-error\" style=\"color:#c00\"></span></p><div id=\"run\"></div>\n"
          "<pre id=\"report-errors\"></pre>\n";
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += fmt::format("<title>nanogpt report: {}</title>\n<style>{}</style>\n",
                      html_escape(d.out_dir), kStyle);
  html += fmt::format("<script>{}</script>\n", kErrorCapture);
  html += "</head><body>\n" + body;
  html += "<script type=\"application/json\" id=\"report-data\">" + json + "</script>\n";
  if (report_has_charts()) {
    html += "<script>" + script_safe(std::string(embedded_echarts_js())) + "</script>\n";
    html += fmt::format("<script>{}</script>\n", kPageScript);
  }
  html += "</body></html>\n";
  return html;
}

namespace {

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    CHECK(out.good(), "cannot write '{}' (is the directory writable?)", tmp);
    out << text;
    CHECK(out.good(), "error writing '{}'", tmp);
  }
  fs::rename(tmp, path);
}

}  // namespace

ReportPaths write_report(const std::string& out_dir) {
  const ReportData data = load_report_data(out_dir);
  ReportPaths paths;
  paths.markdown = (fs::path(out_dir) / "report.md").string();
  paths.html = (fs::path(out_dir) / "report.html").string();
  write_atomically(paths.markdown, report_markdown(data));
  write_atomically(paths.html, report_html(data));
  return paths;
}

}  // namespace nanogpt
