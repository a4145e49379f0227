package io.flinkgpu.contract.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class ControlMessageCodecTest {
    static ControlMessage plan(long epoch) {
        return ControlMessage.of(epoch, 1_700_000_000_000L, 4,
                List.of(new ModelRoute("fashion-mnist-cnn", List.of(new RouteTarget(0, 3), new RouteTarget(2, 1)),
                                "replicated: 1.6 device-s/s over 2 devices"),
                        new ModelRoute("tiny", List.of(new RouteTarget(1, 1)), "cold: co-located")),
                List.of(new SubtaskCommand(2, SubtaskCommand.Action.LOAD, "fashion-mnist-cnn", null, "replica for load"),
                        new SubtaskCommand(3, SubtaskCommand.Action.UNLOAD, "tiny", "1", "moved to subtask 1")),
                "load step on fashion-mnist-cnn");
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void roundTripsEveryFieldAsSnakeCaseJson() throws Exception {
        ControlMessage plan = plan(7);
        byte[] bytes = ControlMessageCodec.encode(plan);
        String json = new String(bytes, StandardCharsets.UTF_8);
        assertThat(json).contains("\"schema_version\":1", "\"epoch\":7", "\"issued_at_millis\"", "\"targets\"",
                "\"action\":\"LOAD\"");
        assertThat(ControlMessageCodec.decode(bytes)).isEqualTo(plan);
    }

    @Test
    void roundTripsAVersionSplitAndSplitsByRequestIdInProportion() throws Exception {
        ControlMessage plan = plan(8).withVersionSplits(List.of(new VersionSplit("fashion-mnist-cnn",
                List.of(new VersionSplit.VersionWeight("1", 0.95), new VersionSplit.VersionWeight("2", 0.05)),
                "rollout 1 -> 2, 5%")));
        byte[] bytes = ControlMessageCodec.encode(plan);
        assertThat(new String(bytes, StandardCharsets.UTF_8)).contains("\"version_splits\"");
        ControlMessage back = ControlMessageCodec.decode(bytes);
        assertThat(back).isEqualTo(plan);
        VersionSplit split = back.versionSplit("fashion-mnist-cnn").orElseThrow();
        int toB = 0;
        for (int i = 0; i < 20_000; i++) {
            toB += split.choose("req-" + i).equals("2") ? 1 : 0;
        }
        assertThat(toB / 20_000.0).isBetween(0.04, 0.06);
        assertThat(plan(9).versionSplit("fashion-mnist-cnn")).isEmpty();
    }

    @Test
    void ignoresUnknownFieldsSoNewerCoordinatorsCanAddThem() throws Exception {
        ControlMessage m = ControlMessageCodec.decode(utf8("{\"schema_version\":1,\"epoch\":3,\"future\":{\"x\":1},"
                + "\"routes\":[{\"model\":\"a\",\"targets\":[{\"subtask\":0,\"weight\":1,\"gpu\":\"x\"}]}]}"));
        assertThat(m.epoch()).isEqualTo(3);
        assertThat(m.route("a")).isPresent();
        assertThat(m.commands()).isEmpty();
    }

    @Test
    void refusesRecordsThatCannotBeAppliedWithAReason() {
        String[][] cases = {
            {"", "empty"},
            {"{", "malformed"},
            {"[1,2]", "malformed"},
            {"null", "null"},
            {"{\"schema_version\":1}", "malformed"},
            {"{\"epoch\":5}", "malformed"},
            {"{\"schema_version\":2,\"epoch\":5}", "unsupported schema_version 2"},
            {"{\"schema_version\":1,\"epoch\":0}", "epoch must be at least 1"},
            {"{\"schema_version\":1,\"epoch\":1,\"parallelism\":-1}", "parallelism"},
            {"{\"schema_version\":1,\"epoch\":1,\"routes\":[{\"model\":\"a\",\"targets\":[]}]}", "no targets"},
            {"{\"schema_version\":1,\"epoch\":1,\"routes\":[{\"targets\":[{\"subtask\":0,\"weight\":1}]}]}",
                "route model is missing"},
            {"{\"schema_version\":1,\"epoch\":1,\"parallelism\":2,\"routes\":[{\"model\":\"a\",\"targets\":"
                    + "[{\"subtask\":2,\"weight\":1}]}]}", "subtask 2 is outside"},
            {"{\"schema_version\":1,\"epoch\":1,\"routes\":[{\"model\":\"a\",\"targets\":"
                    + "[{\"subtask\":0,\"weight\":0}]}]}", "positive and finite"},
            {"{\"schema_version\":1,\"epoch\":1,\"routes\":[{\"model\":\"a\",\"targets\":"
                    + "[{\"subtask\":0,\"weight\":1},{\"subtask\":0,\"weight\":1}]}]}", "twice"},
            {"{\"schema_version\":1,\"epoch\":1,\"routes\":[{\"model\":\"a\",\"targets\":[{\"subtask\":0,\"weight\":1}]},"
                    + "{\"model\":\"a\",\"targets\":[{\"subtask\":1,\"weight\":1}]}]}", "routed twice"},
            {"{\"schema_version\":1,\"epoch\":1,\"routes\":[{\"model\":\"a\",\"targets\":[{\"weight\":1}]}]}",
                "malformed"},
            {"{\"schema_version\":1,\"epoch\":1,\"commands\":[{\"subtask\":0,\"action\":\"REBOOT\",\"model\":\"a\"}]}",
                "malformed"},
            {"{\"schema_version\":1,\"epoch\":1,\"commands\":[{\"subtask\":-1,\"action\":\"LOAD\",\"model\":\"a\"}]}",
                "outside"},
            {"{\"schema_version\":1,\"epoch\":1,\"epoch\":2}", "malformed"},
            {"{\"schema_version\":1,\"epoch\":1,\"version_splits\":[{\"model\":\"a\",\"versions\":[]}]}",
                "has no versions"},
            {"{\"schema_version\":1,\"epoch\":1,\"version_splits\":[{\"model\":\"a\",\"versions\":"
                    + "[{\"version\":\"1\",\"weight\":-1}]}]}", "finite and not negative"},
            {"{\"schema_version\":1,\"epoch\":1,\"version_splits\":[{\"model\":\"a\",\"versions\":"
                    + "[{\"version\":\"1\",\"weight\":0}]}]}", "no positive weight"},
            {"{\"schema_version\":1,\"epoch\":1,\"version_splits\":[{\"model\":\"a\",\"versions\":"
                    + "[{\"version\":\"1\",\"weight\":1},{\"version\":\"1\",\"weight\":1}]}]}", "twice"},
            {"{\"schema_version\":1,\"epoch\":1,\"version_splits\":[{\"model\":\"a\",\"versions\":"
                    + "[{\"version\":\"1\",\"weight\":1}]},{\"model\":\"a\",\"versions\":"
                    + "[{\"version\":\"2\",\"weight\":1}]}]}", "two version splits"},
            {"{\"schema_version\":1,\"epoch\":1} {}", "malformed"},
        };
        for (String[] c : cases) {
            assertThatThrownBy(() -> ControlMessageCodec.decode(utf8(c[0])))
                    .as("record %s", c[0])
                    .isInstanceOf(InvalidControlMessageException.class)
                    .hasMessageContaining(c[1]);
        }
    }

    @Test
    void refusesOversizedRecordsUnread() {
        byte[] big = new byte[ControlMessageCodec.MAX_RECORD_BYTES + 1];
        assertThatThrownBy(() -> ControlMessageCodec.decode(big)).hasMessageContaining("exceeds");
    }

    @Property(tries = 300)
    void arbitraryBytesNeverThrowAnythingButInvalidControlMessage(@ForAll("junk") byte[] bytes) {
        ControlPlanState state = new ControlPlanState();
        assertThat(state.offer(bytes)).isEqualTo(ControlPlanState.Outcome.INVALID);
        assertThat(state.invalidCount()).isEqualTo(1);
        assertThat(state.current()).isNull();
    }

    @Property(tries = 300)
    void corruptedEnvelopesNeverThrowAndNeverApplyUnderVerification(@ForAll("envelopeJunk") byte[] bytes) {
        PlanVerifier verifier = new PlanVerifier(java.util.Map.of("k1", SignedPlanTest.K1));
        ControlPlanState verifying = new ControlPlanState(null, verifier);
        assertThat(verifying.offer(bytes)).isIn(ControlPlanState.Outcome.INVALID, ControlPlanState.Outcome.UNSIGNED,
                ControlPlanState.Outcome.BAD_SIGNATURE);
        assertThat(verifying.invalidCount() + verifying.unsignedCount() + verifying.badSignatureCount()).isEqualTo(1);
        assertThat(verifying.current()).isNull();
        // trusted mode reads the same bytes without throwing, and applies only a plan that decodes
        ControlPlanState trusted = new ControlPlanState();
        ControlPlanState.Outcome outcome = trusted.offer(bytes);
        assertThat(outcome).isIn(ControlPlanState.Outcome.APPLIED, ControlPlanState.Outcome.INVALID);
        assertThat(trusted.current() == null).isEqualTo(outcome == ControlPlanState.Outcome.INVALID);
    }

    @Provide
    Arbitrary<byte[]> envelopeJunk() {
        String valid = new String(SignedPlanTest.SIGNER_1.sign(plan(3)), StandardCharsets.UTF_8);
        Arbitrary<byte[]> truncated = Arbitraries.integers().between(0, valid.length() - 1)
                .map(n -> utf8(valid.substring(0, n)));
        Arbitrary<byte[]> corrupted = Arbitraries.integers().between(0, valid.length() - 1)
                .flatMap(i -> Arbitraries.of('{', '}', '[', '"', ',', ':', '=', '-', 'x', 'A', '5')
                        .map(ch -> utf8(valid.substring(0, i) + ch + valid.substring(i + 1))))
                .filter(b -> !java.util.Arrays.equals(b, utf8(valid)));
        Arbitrary<byte[]> random = Arbitraries.strings().withChars("{}[]\":,plankey_idsignature0123456789=+/ ")
                .ofMaxLength(120).map(ControlMessageCodecTest::utf8);
        return Arbitraries.oneOf(truncated, corrupted, random);
    }

    @Provide
    Arbitrary<byte[]> junk() {
        String valid = new String(ControlMessageCodec.encode(plan(3)), StandardCharsets.UTF_8);
        // truncations and single-character corruptions of a valid record, plus random bytes
        Arbitrary<byte[]> truncated = Arbitraries.integers().between(0, valid.length() - 1)
                .map(n -> utf8(valid.substring(0, n)));
        Arbitrary<byte[]> corrupted = Arbitraries.integers().between(0, valid.length() - 1)
                .flatMap(i -> Arbitraries.of('{', '}', '[', '"', ',', ':', '-', 'x')
                        .map(ch -> utf8(valid.substring(0, i) + ch + valid.substring(i + 1))))
                .filter(b -> {
                    try {
                        ControlMessageCodec.decode(b);
                        return false;
                    } catch (InvalidControlMessageException e) {
                        return true;
                    }
                });
        Arbitrary<byte[]> random = Arbitraries.bytes().array(byte[].class).ofMaxSize(200);
        return Arbitraries.oneOf(truncated, corrupted, random);
    }
}
