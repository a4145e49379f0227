package io.flinkgpu.it;

import io.flinkgpu.job.local.LocalDefault;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * The README's first command, the local default, started as a user would (picocli) on a thread of
 * this JVM. What it prints is kept, and passed on to standard output for the test log.
 */
final class LocalDefaultRun {
    private final Captured captured = new Captured();
    private final AtomicInteger exitCode = new AtomicInteger(Integer.MIN_VALUE);
    private final Thread thread;

    private LocalDefaultRun(String... args) {
        PrintStream out = new PrintStream(captured, true, StandardCharsets.UTF_8);
        thread = new Thread(() -> exitCode.set(new CommandLine(new LocalDefault(out)).execute(args)), "local-default");
    }

    /** Starts the local default with the command line {@code args}. */
    static LocalDefaultRun start(String... args) {
        LocalDefaultRun run = new LocalDefaultRun(args);
        run.thread.start();
        return run;
    }

    /**
     * The first match of {@code pattern} in what it printed, once there; fails if it ends, or
     * {@code timeout} passes, before.
     */
    Matcher awaitLine(Pattern pattern, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            Matcher m = pattern.matcher(output());
            if (m.find()) {
                return m;
            }
            if (!thread.isAlive()) {
                throw new AssertionError("the local default ended before printing " + pattern + ":\n" + output());
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no line like " + pattern + " after " + timeout + ":\n" + output());
    }

    /** Waits at most {@code timeout} for it to end (it returns once its {@code --duration} has passed). */
    void join(Duration timeout) throws InterruptedException {
        thread.join(timeout.toMillis());
    }

    boolean isAlive() {
        return thread.isAlive();
    }

    /** Its exit code, {@link Integer#MIN_VALUE} while it runs. */
    int exitCode() {
        return exitCode.get();
    }

    /** What it printed so far. */
    String output() {
        return captured.toString();
    }

    private static final class Captured extends OutputStream {
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();

        @Override
        public synchronized void write(int b) {
            kept.write(b);
            System.out.write(b);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            kept.write(b, off, len);
            System.out.write(b, off, len);
        }

        @Override
        public synchronized void flush() {
            System.out.flush();
        }

        @Override
        public synchronized String toString() {
            return kept.toString(StandardCharsets.UTF_8);
        }
    }
}
