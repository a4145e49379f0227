// Takes screenshots of the Flink web UI showing the running inference job and its metrics.
// Usage: node webui.mjs <web ui url> <output dir>   (needs playwright-core and Debian's chromium)
import { chromium } from 'playwright-core';

const [base = 'http://localhost:8081', out = '.'] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run', '--disable-quic'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const jobs = await (await fetch(`${base}/jobs`)).json();
  const job = jobs.jobs.find(j => j.status === 'RUNNING');
  if (!job) throw new Error('no running job at ' + base);
  const detail = await (await fetch(`${base}/jobs/${job.id}`)).json();
  const vertex = detail.vertices.find(v => v.name.includes('GPU inference'));

  await page.goto(`${base}/#/job/running/${job.id}/overview`);
  await page.waitForSelector('flink-dagre, svg', { timeout: 30000 });
  await page.waitForTimeout(3000);
  await page.screenshot({ path: `${out}/flink-web-ui-job.png` });

  await page.goto(`${base}/#/job/running/${job.id}/overview/${vertex.id}/metrics`);
  await page.waitForTimeout(3000);
  const picker = page.locator('nz-select').first();
  for (const metric of process.env.METRICS ? process.env.METRICS.split(',') : [
      'GPU_inference.gpu_inference.requestsIn',
      'GPU_inference.gpu_inference.model.fashion-mnist-cnn.version.1.batchSize_mean',
      'GPU_inference.gpu_inference.model.fashion-mnist-cnn.version.1.inferenceLatencyUs_p99',
      'GPU_inference.gpu_inference.model.fashion-mnist-cnn.version.1.queueLatencyUs_p99']) {
    await picker.click();
    await page.keyboard.type(metric.split('.').slice(-1)[0]);
    await page.waitForTimeout(800);
    const option = page.locator('nz-option-item, .ant-select-item-option', { hasText: metric }).first();
    if (await option.count()) {
      await option.click();
    } else {
      await page.keyboard.press('Escape');
      console.warn('metric not offered by the UI yet: ' + metric);
    }
    await page.waitForTimeout(500);
  }
  await page.keyboard.press('Escape');
  await page.waitForTimeout(6000);
  await page.screenshot({ path: `${out}/flink-web-ui-metrics.png` });
  console.log(`wrote ${out}/flink-web-ui-job.png and ${out}/flink-web-ui-metrics.png for job ${job.id}`);
} finally {
  await browser.close();
}
