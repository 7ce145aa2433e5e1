// Draws each [data-chart] element with uPlot from its data-series (uPlot's column data) and data-names.
// The data stays readable on window.schoonerCharts[id] (the tests read it there).
window.schoonerCharts = window.schoonerCharts || {};

function drawChart(el) {
  if (el.dataset.drawn) return;
  el.dataset.drawn = "1";
  const data = JSON.parse(el.dataset.series || "[[]]");
  const names = JSON.parse(el.dataset.names || "[]");
  const colors = ["#1f6feb", "#d29922", "#2da44e", "#cf222e", "#8250df", "#0a7ea4", "#bf8700", "#57606a", "#e16f24"];
  const series = [{}].concat(names.map((name, i) => ({label: name, stroke: colors[i % colors.length], width: i === 0 ? 2 : 1})));
  window.schoonerCharts[el.id] = data;
  const width = Math.max(el.clientWidth || 0, 600);
  new uPlot({width: width, height: 220, series: series, axes: [{}, {label: el.dataset.unit || ""}]}, data, el);
}

function drawCharts(root) {
  (root || document).querySelectorAll("[data-chart]").forEach(drawChart);
}

document.addEventListener("DOMContentLoaded", () => drawCharts(document));
document.addEventListener("htmx:load", (e) => drawCharts(e.target));
