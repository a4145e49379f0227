package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.ThreadCpu;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.api.functions.async.RichAsyncFunction;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Starts the systems under test in a local (MiniCluster) environment, each reading its own
 * requests topic and writing its own responses topic on the embedded broker.
 */
public final class Deployments {
    private Deployments() {}

    /**
     * JOB: the inference job. PASSTHROUGH: the job with {@link Passthrough} in place of inference.
     * FLINK_MAP / FLINK_ASYNC: per-record ONNX Runtime baselines. SQL: {@code ML_PREDICT} with the
     * {@code onnx} model provider between Kafka tables ({@link SqlPredict}). RELAY: no Flink, a
     * plain Kafka consumer and producer answering as the passthrough does ({@link KafkaRelay},
     * started by itself rather than here).
     */
    public enum Kind { JOB, PASSTHROUGH, FLINK_MAP, FLINK_ASYNC, SQL, RELAY }

    /**
     * Starts {@code kind} with {@code config} (bootstrap servers, topics, model repository and any
     * {@code -D} option already set in it) for {@code model} of the repository (whose file is
     * {@code modelFile}), on a local cluster started in the thread group
     * {@link ThreadCpu#FLINK_GROUP} so that its threads' CPU is told apart.
     */
    public static JobClient start(Kind kind, Configuration config, String model, String modelFile, String name)
            throws Exception {
        Configuration c = new Configuration(config);
        c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                Files.createTempDirectory("bench-checkpoints").toUri().toString());
        return ThreadCpu.inGroup(ThreadCpu.FLINK_GROUP, () -> {
            if (kind == Kind.JOB) {
                return startJob(c, 1, name);
            }
            if (kind == Kind.SQL) {
                return SqlPredict.start(c, model, name);
            }
            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(c);
            env.setParallelism(1);
            if (kind == Kind.PASSTHROUGH) {
                InferenceJob.build(env, c, Passthrough.stage(c.get(GpuInferenceOptions.MODEL_REPOSITORY)));
            } else {
                perRecord(env, c, modelFile, kind == Kind.FLINK_ASYNC);
            }
            return env.executeAsync(name);
        });
    }

    /** Starts the inference job with {@code config} as it is, at {@code parallelism}, on a local cluster of its own. */
    public static JobClient startJob(Configuration config, int parallelism, String name) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(config);
        env.setParallelism(parallelism);
        InferenceJob.build(env, config);
        return env.executeAsync(name);
    }

    /**
     * The Async I/O baseline's threads: as many as the job runs batches at once on the CPU
     * (inference.execution-threads, else what the job sizes from the cores of the one task slot the
     * benchmark's local cluster has).
     */
    static int asyncThreads(Configuration c) {
        return executionThreads(c, io.flinkgpu.inference.device.DeviceKind.CPU);
    }

    /**
     * The batches a runtime configured by {@code c} executes at once on {@code kind} (null: the
     * device {@code c} configures on this machine), in the benchmark's local cluster of one task slot.
     */
    static int executionThreads(org.apache.flink.configuration.ReadableConfig c,
            io.flinkgpu.inference.device.DeviceKind kind) {
        io.flinkgpu.inference.operator.InferenceSettings s =
                io.flinkgpu.inference.operator.InferenceSettings.fromConfiguration(c);
        return s.executionThreads(kind == null ? s.device().kind() : kind,
                io.flinkgpu.inference.operator.InferenceSettings.coresPerSlot(1));
    }

    /**
     * Kafka -> per-record ONNX Runtime -> Kafka, with the job's own state backend, checkpoint
     * interval and buffer timeout so that the only difference is how inference is called.
     */
    static void perRecord(StreamExecutionEnvironment env, Configuration c, String modelFile, boolean async) {
        Configuration state = new Configuration();
        state.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        env.configure(state);
        env.setBufferTimeout(c.get(InferenceJobOptions.BUFFER_TIMEOUT).toMillis());
        long interval = c.get(InferenceJobOptions.CHECKPOINT_INTERVAL).toMillis();
        if (interval > 0) {
            env.enableCheckpointing(interval);
        }
        String bootstrap = c.get(InferenceJobOptions.BOOTSTRAP_SERVERS);
        KafkaSource<byte[]> source = KafkaSource.<byte[]>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(c.get(InferenceJobOptions.REQUESTS_TOPIC))
                .setGroupId(c.get(InferenceJobOptions.GROUP_ID))
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new ValueDeserializer())
                .build();
        DataStream<byte[]> in = env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka requests");
        TypeInformation<Tuple2<byte[], byte[]>> type = Types.TUPLE(PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
                PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
        PerRecordInference inference = new PerRecordInference(modelFile);
        DataStream<Tuple2<byte[], byte[]>> out = async
                ? AsyncDataStream.unorderedWait(in, new AsyncInference(inference, asyncThreads(c)), 30,
                        TimeUnit.SECONDS, 100).returns(type)
                        .name("Async I/O ONNX Runtime per record")
                : in.map(new MapInference(inference)).returns(type).name("Map ONNX Runtime per record");
        String responses = c.get(InferenceJobOptions.RESPONSES_TOPIC);
        Properties producer = new Properties();
        producer.setProperty("linger.ms", "2");
        out.sinkTo(KafkaSink.<Tuple2<byte[], byte[]>>builder()
                .setBootstrapServers(bootstrap)
                .setKafkaProducerConfig(producer)
                .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                .setRecordSerializer((KafkaRecordSerializationSchema<Tuple2<byte[], byte[]>>) (r, ctx, ts) ->
                        new ProducerRecord<>(responses, r.f0, r.f1))
                .build()).name("Kafka responses");
    }

    static final class ValueDeserializer implements KafkaRecordDeserializationSchema<byte[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<byte[]> out) {
            out.collect(record.value());
        }

        @Override
        public TypeInformation<byte[]> getProducedType() {
            return PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO;
        }
    }

    static final class MapInference extends RichMapFunction<byte[], Tuple2<byte[], byte[]>> {
        private static final long serialVersionUID = 1L;
        private final PerRecordInference inference;

        MapInference(PerRecordInference inference) {
            this.inference = inference;
        }

        @Override
        public void open(OpenContext context) throws Exception {
            inference.open();
        }

        @Override
        public Tuple2<byte[], byte[]> map(byte[] value) throws Exception {
            return inference.process(value);
        }

        @Override
        public void close() throws Exception {
            inference.close();
        }
    }

    static final class AsyncInference extends RichAsyncFunction<byte[], Tuple2<byte[], byte[]>> {
        private static final long serialVersionUID = 1L;
        private final PerRecordInference inference;
        private final int threads;
        private transient ExecutorService executor;

        AsyncInference(PerRecordInference inference, int threads) {
            this.inference = inference;
            this.threads = threads;
        }

        @Override
        public void open(OpenContext context) throws Exception {
            inference.open();
            java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
            executor = Executors.newFixedThreadPool(threads, r -> {
                Thread t = new Thread(r, "per-record-inference-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }

        @Override
        public void asyncInvoke(byte[] input, ResultFuture<Tuple2<byte[], byte[]>> result) {
            executor.execute(() -> {
                try {
                    result.complete(Collections.singleton(inference.process(input)));
                } catch (Exception e) {
                    result.completeExceptionally(e);
                }
            });
        }

        @Override
        public void close() throws Exception {
            executor.shutdownNow();
            inference.close();
        }
    }

    /** The {@code -D} options of a configuration, applied over {@code base}. */
    public static Configuration with(Configuration base, Map<String, String> options) {
        Configuration c = new Configuration(base);
        c.addAll(Configuration.fromMap(options));
        return c;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
