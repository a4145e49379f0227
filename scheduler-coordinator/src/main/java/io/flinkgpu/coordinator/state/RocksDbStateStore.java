package io.flinkgpu.coordinator.state;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The durable {@link StateStore}: one RocksDB database (Flink's own JNI build, frocksdbjni), keys
 * and values as UTF-8 strings and JSON. Writes are atomic batches through the write-ahead log;
 * plan epochs are also synced, so a recorded epoch survives a crash of the machine too. One
 * process at a time: RocksDB locks the directory.
 */
public final class RocksDbStateStore extends KeyValueStateStore {
    static {
        RocksDB.loadLibrary();
    }

    private final Options options;
    private final RocksDB db;
    private final WriteOptions syncWrites;
    private final WriteOptions plainWrites;

    private RocksDbStateStore(Options options, RocksDB db) {
        this.options = options;
        this.db = db;
        this.syncWrites = new WriteOptions().setSync(true);
        this.plainWrites = new WriteOptions();
    }

    public static RocksDbStateStore open(Path directory) {
        try {
            Files.createDirectories(directory);
            Options options = new Options().setCreateIfMissing(true);
            try {
                return new RocksDbStateStore(options, RocksDB.open(options, directory.toString()));
            } catch (RocksDBException e) {
                options.close();
                throw e;
            }
        } catch (RocksDBException | java.io.IOException e) {
            throw new IllegalStateException("cannot open coordinator state in " + directory + ": " + e.getMessage(), e);
        }
    }

    private static byte[] key(String k) {
        return k.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    protected byte[] get(String key) {
        try {
            return db.get(key(key));
        } catch (RocksDBException e) {
            throw new IllegalStateException("state read failed: " + e.getMessage(), e);
        }
    }

    @Override
    protected void write(Map<String, byte[]> entries, boolean sync) {
        try (WriteBatch batch = new WriteBatch()) {
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                if (e.getValue() == null) {
                    batch.delete(key(e.getKey()));
                } else {
                    batch.put(key(e.getKey()), e.getValue());
                }
            }
            db.write(sync ? syncWrites : plainWrites, batch);
        } catch (RocksDBException e) {
            throw new IllegalStateException("state write failed: " + e.getMessage(), e);
        }
    }

    @Override
    protected SortedMap<String, byte[]> scan(String prefix) {
        SortedMap<String, byte[]> out = new TreeMap<>();
        byte[] p = key(prefix);
        try (RocksIterator it = db.newIterator()) {
            for (it.seek(p); it.isValid(); it.next()) {
                byte[] k = it.key();
                if (k.length < p.length || !Arrays.equals(k, 0, p.length, p, 0, p.length)) {
                    break;
                }
                out.put(new String(k, StandardCharsets.UTF_8), it.value());
            }
        }
        return out;
    }

    @Override
    public synchronized void close() {
        syncWrites.close();
        plainWrites.close();
        db.close();
        options.close();
    }
}
