package io.flinkgpu.inference.operator;

import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;

/**
 * Runs an operator test harness's mail (batch completions from the execution threads, timers'
 * callbacks) on the test's thread, which stands in for the task's mailbox thread.
 */
final class Mailboxes {
    /** How long {@link #runUntil} waits at most. */
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private Mailboxes() {}

    /** Runs the mail in the mailbox now, and any posted while it runs. */
    static void runPending(OneInputStreamOperatorTestHarness<?, ?> h) throws Exception {
        Optional<Mail> mail;
        while ((mail = h.getTaskMailbox().tryTake(TaskMailbox.MIN_PRIORITY)).isPresent()) {
            mail.get().run();
        }
    }

    /** Runs mail as it comes until {@code done} holds or {@link #TIMEOUT} passes. */
    static void runUntil(OneInputStreamOperatorTestHarness<?, ?> h, BooleanSupplier done) throws Exception {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            Optional<Mail> mail = h.getTaskMailbox().tryTake(TaskMailbox.MIN_PRIORITY);
            if (mail.isPresent()) {
                mail.get().run();
            } else {
                Thread.sleep(1);
            }
        }
    }
}
