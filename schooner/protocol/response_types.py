"""The response types of each API this broker serves, mirroring request_types.py: one union per API
of kio's versioned response classes (Produce v0-v2 from legacy_produce/), and response_for(), the
response class that answers a request, typed per API.

A handler builds its answer with `make(response_for(request), ...)`, so mypy sees that a Fetch
handler returns a FetchResponse. Nested classes (a version's topics and partitions) come from the
same generated module: `nested(cls, "Name")`. Generated from request_types.py;
tests/protocol/test_response_types.py fails when the two disagree.
"""

from __future__ import annotations

from typing import TypeAlias, overload

from kio.schema.add_offsets_to_txn.v0.response import AddOffsetsToTxnResponse as AddOffsetsToTxnV0
from kio.schema.add_offsets_to_txn.v1.response import AddOffsetsToTxnResponse as AddOffsetsToTxnV1
from kio.schema.add_offsets_to_txn.v2.response import AddOffsetsToTxnResponse as AddOffsetsToTxnV2
from kio.schema.add_offsets_to_txn.v3.response import AddOffsetsToTxnResponse as AddOffsetsToTxnV3
from kio.schema.add_offsets_to_txn.v4.response import AddOffsetsToTxnResponse as AddOffsetsToTxnV4
from kio.schema.add_partitions_to_txn.v0.response import AddPartitionsToTxnResponse as AddPartitionsToTxnV0
from kio.schema.add_partitions_to_txn.v1.response import AddPartitionsToTxnResponse as AddPartitionsToTxnV1
from kio.schema.add_partitions_to_txn.v2.response import AddPartitionsToTxnResponse as AddPartitionsToTxnV2
from kio.schema.add_partitions_to_txn.v3.response import AddPartitionsToTxnResponse as AddPartitionsToTxnV3
from kio.schema.add_partitions_to_txn.v4.response import AddPartitionsToTxnResponse as AddPartitionsToTxnV4
from kio.schema.add_partitions_to_txn.v5.response import AddPartitionsToTxnResponse as AddPartitionsToTxnV5
from kio.schema.alter_client_quotas.v0.response import AlterClientQuotasResponse as AlterClientQuotasV0
from kio.schema.alter_client_quotas.v1.response import AlterClientQuotasResponse as AlterClientQuotasV1
from kio.schema.alter_configs.v0.response import AlterConfigsResponse as AlterConfigsV0
from kio.schema.alter_configs.v1.response import AlterConfigsResponse as AlterConfigsV1
from kio.schema.alter_configs.v2.response import AlterConfigsResponse as AlterConfigsV2
from kio.schema.alter_partition_reassignments.v0.response import (
    AlterPartitionReassignmentsResponse as AlterPartitionReassignmentsV0,
)
from kio.schema.alter_partition_reassignments.v1.response import (
    AlterPartitionReassignmentsResponse as AlterPartitionReassignmentsV1,
)
from kio.schema.alter_replica_log_dirs.v1.response import AlterReplicaLogDirsResponse as AlterReplicaLogDirsV1
from kio.schema.alter_replica_log_dirs.v2.response import AlterReplicaLogDirsResponse as AlterReplicaLogDirsV2
from kio.schema.alter_share_group_offsets.v0.response import (
    AlterShareGroupOffsetsResponse as AlterShareGroupOffsetsV0,
)
from kio.schema.alter_user_scram_credentials.v0.response import (
    AlterUserScramCredentialsResponse as AlterUserScramCredentialsV0,
)
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsV0
from kio.schema.api_versions.v1.response import ApiVersionsResponse as ApiVersionsV1
from kio.schema.api_versions.v2.response import ApiVersionsResponse as ApiVersionsV2
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsV3
from kio.schema.api_versions.v4.response import ApiVersionsResponse as ApiVersionsV4
from kio.schema.consumer_group_describe.v0.response import (
    ConsumerGroupDescribeResponse as ConsumerGroupDescribeV0,
)
from kio.schema.consumer_group_describe.v1.response import (
    ConsumerGroupDescribeResponse as ConsumerGroupDescribeV1,
)
from kio.schema.consumer_group_heartbeat.v0.response import (
    ConsumerGroupHeartbeatResponse as ConsumerGroupHeartbeatV0,
)
from kio.schema.consumer_group_heartbeat.v1.response import (
    ConsumerGroupHeartbeatResponse as ConsumerGroupHeartbeatV1,
)
from kio.schema.create_acls.v1.response import CreateAclsResponse as CreateAclsV1
from kio.schema.create_acls.v2.response import CreateAclsResponse as CreateAclsV2
from kio.schema.create_acls.v3.response import CreateAclsResponse as CreateAclsV3
from kio.schema.create_partitions.v0.response import CreatePartitionsResponse as CreatePartitionsV0
from kio.schema.create_partitions.v1.response import CreatePartitionsResponse as CreatePartitionsV1
from kio.schema.create_partitions.v2.response import CreatePartitionsResponse as CreatePartitionsV2
from kio.schema.create_partitions.v3.response import CreatePartitionsResponse as CreatePartitionsV3
from kio.schema.create_topics.v2.response import CreateTopicsResponse as CreateTopicsV2
from kio.schema.create_topics.v3.response import CreateTopicsResponse as CreateTopicsV3
from kio.schema.create_topics.v4.response import CreateTopicsResponse as CreateTopicsV4
from kio.schema.create_topics.v5.response import CreateTopicsResponse as CreateTopicsV5
from kio.schema.create_topics.v6.response import CreateTopicsResponse as CreateTopicsV6
from kio.schema.create_topics.v7.response import CreateTopicsResponse as CreateTopicsV7
from kio.schema.delete_acls.v1.response import DeleteAclsResponse as DeleteAclsV1
from kio.schema.delete_acls.v2.response import DeleteAclsResponse as DeleteAclsV2
from kio.schema.delete_acls.v3.response import DeleteAclsResponse as DeleteAclsV3
from kio.schema.delete_groups.v0.response import DeleteGroupsResponse as DeleteGroupsV0
from kio.schema.delete_groups.v1.response import DeleteGroupsResponse as DeleteGroupsV1
from kio.schema.delete_groups.v2.response import DeleteGroupsResponse as DeleteGroupsV2
from kio.schema.delete_records.v0.response import DeleteRecordsResponse as DeleteRecordsV0
from kio.schema.delete_records.v1.response import DeleteRecordsResponse as DeleteRecordsV1
from kio.schema.delete_records.v2.response import DeleteRecordsResponse as DeleteRecordsV2
from kio.schema.delete_share_group_offsets.v0.response import (
    DeleteShareGroupOffsetsResponse as DeleteShareGroupOffsetsV0,
)
from kio.schema.delete_topics.v1.response import DeleteTopicsResponse as DeleteTopicsV1
from kio.schema.delete_topics.v2.response import DeleteTopicsResponse as DeleteTopicsV2
from kio.schema.delete_topics.v3.response import DeleteTopicsResponse as DeleteTopicsV3
from kio.schema.delete_topics.v4.response import DeleteTopicsResponse as DeleteTopicsV4
from kio.schema.delete_topics.v5.response import DeleteTopicsResponse as DeleteTopicsV5
from kio.schema.delete_topics.v6.response import DeleteTopicsResponse as DeleteTopicsV6
from kio.schema.describe_acls.v1.response import DescribeAclsResponse as DescribeAclsV1
from kio.schema.describe_acls.v2.response import DescribeAclsResponse as DescribeAclsV2
from kio.schema.describe_acls.v3.response import DescribeAclsResponse as DescribeAclsV3
from kio.schema.describe_client_quotas.v0.response import (
    DescribeClientQuotasResponse as DescribeClientQuotasV0,
)
from kio.schema.describe_client_quotas.v1.response import (
    DescribeClientQuotasResponse as DescribeClientQuotasV1,
)
from kio.schema.describe_cluster.v0.response import DescribeClusterResponse as DescribeClusterV0
from kio.schema.describe_cluster.v1.response import DescribeClusterResponse as DescribeClusterV1
from kio.schema.describe_cluster.v2.response import DescribeClusterResponse as DescribeClusterV2
from kio.schema.describe_configs.v1.response import DescribeConfigsResponse as DescribeConfigsV1
from kio.schema.describe_configs.v2.response import DescribeConfigsResponse as DescribeConfigsV2
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse as DescribeConfigsV3
from kio.schema.describe_configs.v4.response import DescribeConfigsResponse as DescribeConfigsV4
from kio.schema.describe_groups.v0.response import DescribeGroupsResponse as DescribeGroupsV0
from kio.schema.describe_groups.v1.response import DescribeGroupsResponse as DescribeGroupsV1
from kio.schema.describe_groups.v2.response import DescribeGroupsResponse as DescribeGroupsV2
from kio.schema.describe_groups.v3.response import DescribeGroupsResponse as DescribeGroupsV3
from kio.schema.describe_groups.v4.response import DescribeGroupsResponse as DescribeGroupsV4
from kio.schema.describe_groups.v5.response import DescribeGroupsResponse as DescribeGroupsV5
from kio.schema.describe_groups.v6.response import DescribeGroupsResponse as DescribeGroupsV6
from kio.schema.describe_log_dirs.v1.response import DescribeLogDirsResponse as DescribeLogDirsV1
from kio.schema.describe_log_dirs.v2.response import DescribeLogDirsResponse as DescribeLogDirsV2
from kio.schema.describe_log_dirs.v3.response import DescribeLogDirsResponse as DescribeLogDirsV3
from kio.schema.describe_log_dirs.v4.response import DescribeLogDirsResponse as DescribeLogDirsV4
from kio.schema.describe_log_dirs.v5.response import DescribeLogDirsResponse as DescribeLogDirsV5
from kio.schema.describe_producers.v0.response import DescribeProducersResponse as DescribeProducersV0
from kio.schema.describe_share_group_offsets.v0.response import (
    DescribeShareGroupOffsetsResponse as DescribeShareGroupOffsetsV0,
)
from kio.schema.describe_share_group_offsets.v1.response import (
    DescribeShareGroupOffsetsResponse as DescribeShareGroupOffsetsV1,
)
from kio.schema.describe_transactions.v0.response import (
    DescribeTransactionsResponse as DescribeTransactionsV0,
)
from kio.schema.describe_user_scram_credentials.v0.response import (
    DescribeUserScramCredentialsResponse as DescribeUserScramCredentialsV0,
)
from kio.schema.elect_leaders.v0.response import ElectLeadersResponse as ElectLeadersV0
from kio.schema.elect_leaders.v1.response import ElectLeadersResponse as ElectLeadersV1
from kio.schema.elect_leaders.v2.response import ElectLeadersResponse as ElectLeadersV2
from kio.schema.end_txn.v0.response import EndTxnResponse as EndTxnV0
from kio.schema.end_txn.v1.response import EndTxnResponse as EndTxnV1
from kio.schema.end_txn.v2.response import EndTxnResponse as EndTxnV2
from kio.schema.end_txn.v3.response import EndTxnResponse as EndTxnV3
from kio.schema.end_txn.v4.response import EndTxnResponse as EndTxnV4
from kio.schema.end_txn.v5.response import EndTxnResponse as EndTxnV5
from kio.schema.fetch.v4.response import FetchResponse as FetchV4
from kio.schema.fetch.v5.response import FetchResponse as FetchV5
from kio.schema.fetch.v6.response import FetchResponse as FetchV6
from kio.schema.fetch.v7.response import FetchResponse as FetchV7
from kio.schema.fetch.v8.response import FetchResponse as FetchV8
from kio.schema.fetch.v9.response import FetchResponse as FetchV9
from kio.schema.fetch.v10.response import FetchResponse as FetchV10
from kio.schema.fetch.v11.response import FetchResponse as FetchV11
from kio.schema.fetch.v12.response import FetchResponse as FetchV12
from kio.schema.fetch.v13.response import FetchResponse as FetchV13
from kio.schema.fetch.v14.response import FetchResponse as FetchV14
from kio.schema.fetch.v15.response import FetchResponse as FetchV15
from kio.schema.fetch.v16.response import FetchResponse as FetchV16
from kio.schema.fetch.v17.response import FetchResponse as FetchV17
from kio.schema.fetch.v18.response import FetchResponse as FetchV18
from kio.schema.find_coordinator.v0.response import FindCoordinatorResponse as FindCoordinatorV0
from kio.schema.find_coordinator.v1.response import FindCoordinatorResponse as FindCoordinatorV1
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse as FindCoordinatorV2
from kio.schema.find_coordinator.v3.response import FindCoordinatorResponse as FindCoordinatorV3
from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse as FindCoordinatorV4
from kio.schema.find_coordinator.v5.response import FindCoordinatorResponse as FindCoordinatorV5
from kio.schema.find_coordinator.v6.response import FindCoordinatorResponse as FindCoordinatorV6
from kio.schema.heartbeat.v0.response import HeartbeatResponse as HeartbeatV0
from kio.schema.heartbeat.v1.response import HeartbeatResponse as HeartbeatV1
from kio.schema.heartbeat.v2.response import HeartbeatResponse as HeartbeatV2
from kio.schema.heartbeat.v3.response import HeartbeatResponse as HeartbeatV3
from kio.schema.heartbeat.v4.response import HeartbeatResponse as HeartbeatV4
from kio.schema.incremental_alter_configs.v0.response import (
    IncrementalAlterConfigsResponse as IncrementalAlterConfigsV0,
)
from kio.schema.incremental_alter_configs.v1.response import (
    IncrementalAlterConfigsResponse as IncrementalAlterConfigsV1,
)
from kio.schema.init_producer_id.v0.response import InitProducerIdResponse as InitProducerIdV0
from kio.schema.init_producer_id.v1.response import InitProducerIdResponse as InitProducerIdV1
from kio.schema.init_producer_id.v2.response import InitProducerIdResponse as InitProducerIdV2
from kio.schema.init_producer_id.v3.response import InitProducerIdResponse as InitProducerIdV3
from kio.schema.init_producer_id.v4.response import InitProducerIdResponse as InitProducerIdV4
from kio.schema.init_producer_id.v5.response import InitProducerIdResponse as InitProducerIdV5
from kio.schema.init_producer_id.v6.response import InitProducerIdResponse as InitProducerIdV6
from kio.schema.join_group.v0.response import JoinGroupResponse as JoinGroupV0
from kio.schema.join_group.v1.response import JoinGroupResponse as JoinGroupV1
from kio.schema.join_group.v2.response import JoinGroupResponse as JoinGroupV2
from kio.schema.join_group.v3.response import JoinGroupResponse as JoinGroupV3
from kio.schema.join_group.v4.response import JoinGroupResponse as JoinGroupV4
from kio.schema.join_group.v5.response import JoinGroupResponse as JoinGroupV5
from kio.schema.join_group.v6.response import JoinGroupResponse as JoinGroupV6
from kio.schema.join_group.v7.response import JoinGroupResponse as JoinGroupV7
from kio.schema.join_group.v8.response import JoinGroupResponse as JoinGroupV8
from kio.schema.join_group.v9.response import JoinGroupResponse as JoinGroupV9
from kio.schema.leave_group.v0.response import LeaveGroupResponse as LeaveGroupV0
from kio.schema.leave_group.v1.response import LeaveGroupResponse as LeaveGroupV1
from kio.schema.leave_group.v2.response import LeaveGroupResponse as LeaveGroupV2
from kio.schema.leave_group.v3.response import LeaveGroupResponse as LeaveGroupV3
from kio.schema.leave_group.v4.response import LeaveGroupResponse as LeaveGroupV4
from kio.schema.leave_group.v5.response import LeaveGroupResponse as LeaveGroupV5
from kio.schema.list_groups.v0.response import ListGroupsResponse as ListGroupsV0
from kio.schema.list_groups.v1.response import ListGroupsResponse as ListGroupsV1
from kio.schema.list_groups.v2.response import ListGroupsResponse as ListGroupsV2
from kio.schema.list_groups.v3.response import ListGroupsResponse as ListGroupsV3
from kio.schema.list_groups.v4.response import ListGroupsResponse as ListGroupsV4
from kio.schema.list_groups.v5.response import ListGroupsResponse as ListGroupsV5
from kio.schema.list_offsets.v1.response import ListOffsetsResponse as ListOffsetsV1
from kio.schema.list_offsets.v2.response import ListOffsetsResponse as ListOffsetsV2
from kio.schema.list_offsets.v3.response import ListOffsetsResponse as ListOffsetsV3
from kio.schema.list_offsets.v4.response import ListOffsetsResponse as ListOffsetsV4
from kio.schema.list_offsets.v5.response import ListOffsetsResponse as ListOffsetsV5
from kio.schema.list_offsets.v6.response import ListOffsetsResponse as ListOffsetsV6
from kio.schema.list_offsets.v7.response import ListOffsetsResponse as ListOffsetsV7
from kio.schema.list_offsets.v8.response import ListOffsetsResponse as ListOffsetsV8
from kio.schema.list_offsets.v9.response import ListOffsetsResponse as ListOffsetsV9
from kio.schema.list_offsets.v10.response import ListOffsetsResponse as ListOffsetsV10
from kio.schema.list_offsets.v11.response import ListOffsetsResponse as ListOffsetsV11
from kio.schema.list_partition_reassignments.v0.response import (
    ListPartitionReassignmentsResponse as ListPartitionReassignmentsV0,
)
from kio.schema.list_transactions.v0.response import ListTransactionsResponse as ListTransactionsV0
from kio.schema.list_transactions.v1.response import ListTransactionsResponse as ListTransactionsV1
from kio.schema.list_transactions.v2.response import ListTransactionsResponse as ListTransactionsV2
from kio.schema.metadata.v0.response import MetadataResponse as MetadataV0
from kio.schema.metadata.v1.response import MetadataResponse as MetadataV1
from kio.schema.metadata.v2.response import MetadataResponse as MetadataV2
from kio.schema.metadata.v3.response import MetadataResponse as MetadataV3
from kio.schema.metadata.v4.response import MetadataResponse as MetadataV4
from kio.schema.metadata.v5.response import MetadataResponse as MetadataV5
from kio.schema.metadata.v6.response import MetadataResponse as MetadataV6
from kio.schema.metadata.v7.response import MetadataResponse as MetadataV7
from kio.schema.metadata.v8.response import MetadataResponse as MetadataV8
from kio.schema.metadata.v9.response import MetadataResponse as MetadataV9
from kio.schema.metadata.v10.response import MetadataResponse as MetadataV10
from kio.schema.metadata.v11.response import MetadataResponse as MetadataV11
from kio.schema.metadata.v12.response import MetadataResponse as MetadataV12
from kio.schema.metadata.v13.response import MetadataResponse as MetadataV13
from kio.schema.offset_commit.v2.response import OffsetCommitResponse as OffsetCommitV2
from kio.schema.offset_commit.v3.response import OffsetCommitResponse as OffsetCommitV3
from kio.schema.offset_commit.v4.response import OffsetCommitResponse as OffsetCommitV4
from kio.schema.offset_commit.v5.response import OffsetCommitResponse as OffsetCommitV5
from kio.schema.offset_commit.v6.response import OffsetCommitResponse as OffsetCommitV6
from kio.schema.offset_commit.v7.response import OffsetCommitResponse as OffsetCommitV7
from kio.schema.offset_commit.v8.response import OffsetCommitResponse as OffsetCommitV8
from kio.schema.offset_commit.v9.response import OffsetCommitResponse as OffsetCommitV9
from kio.schema.offset_commit.v10.response import OffsetCommitResponse as OffsetCommitV10
from kio.schema.offset_delete.v0.response import OffsetDeleteResponse as OffsetDeleteV0
from kio.schema.offset_fetch.v1.response import OffsetFetchResponse as OffsetFetchV1
from kio.schema.offset_fetch.v2.response import OffsetFetchResponse as OffsetFetchV2
from kio.schema.offset_fetch.v3.response import OffsetFetchResponse as OffsetFetchV3
from kio.schema.offset_fetch.v4.response import OffsetFetchResponse as OffsetFetchV4
from kio.schema.offset_fetch.v5.response import OffsetFetchResponse as OffsetFetchV5
from kio.schema.offset_fetch.v6.response import OffsetFetchResponse as OffsetFetchV6
from kio.schema.offset_fetch.v7.response import OffsetFetchResponse as OffsetFetchV7
from kio.schema.offset_fetch.v8.response import OffsetFetchResponse as OffsetFetchV8
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse as OffsetFetchV9
from kio.schema.offset_fetch.v10.response import OffsetFetchResponse as OffsetFetchV10
from kio.schema.offset_for_leader_epoch.v2.response import (
    OffsetForLeaderEpochResponse as OffsetForLeaderEpochV2,
)
from kio.schema.offset_for_leader_epoch.v3.response import (
    OffsetForLeaderEpochResponse as OffsetForLeaderEpochV3,
)
from kio.schema.offset_for_leader_epoch.v4.response import (
    OffsetForLeaderEpochResponse as OffsetForLeaderEpochV4,
)
from kio.schema.produce.v3.response import ProduceResponse as ProduceV3
from kio.schema.produce.v4.response import ProduceResponse as ProduceV4
from kio.schema.produce.v5.response import ProduceResponse as ProduceV5
from kio.schema.produce.v6.response import ProduceResponse as ProduceV6
from kio.schema.produce.v7.response import ProduceResponse as ProduceV7
from kio.schema.produce.v8.response import ProduceResponse as ProduceV8
from kio.schema.produce.v9.response import ProduceResponse as ProduceV9
from kio.schema.produce.v10.response import ProduceResponse as ProduceV10
from kio.schema.produce.v11.response import ProduceResponse as ProduceV11
from kio.schema.produce.v12.response import ProduceResponse as ProduceV12
from kio.schema.produce.v13.response import ProduceResponse as ProduceV13
from kio.schema.sasl_authenticate.v0.response import SaslAuthenticateResponse as SaslAuthenticateV0
from kio.schema.sasl_authenticate.v1.response import SaslAuthenticateResponse as SaslAuthenticateV1
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse as SaslAuthenticateV2
from kio.schema.sasl_handshake.v0.response import SaslHandshakeResponse as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse as SaslHandshakeV1
from kio.schema.share_acknowledge.v1.response import ShareAcknowledgeResponse as ShareAcknowledgeV1
from kio.schema.share_acknowledge.v2.response import ShareAcknowledgeResponse as ShareAcknowledgeV2
from kio.schema.share_fetch.v1.response import ShareFetchResponse as ShareFetchV1
from kio.schema.share_fetch.v2.response import ShareFetchResponse as ShareFetchV2
from kio.schema.share_group_describe.v1.response import ShareGroupDescribeResponse as ShareGroupDescribeV1
from kio.schema.share_group_heartbeat.v1.response import ShareGroupHeartbeatResponse as ShareGroupHeartbeatV1
from kio.schema.streams_group_describe.v0.response import (
    StreamsGroupDescribeResponse as StreamsGroupDescribeV0,
)
from kio.schema.streams_group_heartbeat.v0.response import (
    StreamsGroupHeartbeatResponse as StreamsGroupHeartbeatV0,
)
from kio.schema.sync_group.v0.response import SyncGroupResponse as SyncGroupV0
from kio.schema.sync_group.v1.response import SyncGroupResponse as SyncGroupV1
from kio.schema.sync_group.v2.response import SyncGroupResponse as SyncGroupV2
from kio.schema.sync_group.v3.response import SyncGroupResponse as SyncGroupV3
from kio.schema.sync_group.v4.response import SyncGroupResponse as SyncGroupV4
from kio.schema.sync_group.v5.response import SyncGroupResponse as SyncGroupV5
from kio.schema.txn_offset_commit.v0.response import TxnOffsetCommitResponse as TxnOffsetCommitV0
from kio.schema.txn_offset_commit.v1.response import TxnOffsetCommitResponse as TxnOffsetCommitV1
from kio.schema.txn_offset_commit.v2.response import TxnOffsetCommitResponse as TxnOffsetCommitV2
from kio.schema.txn_offset_commit.v3.response import TxnOffsetCommitResponse as TxnOffsetCommitV3
from kio.schema.txn_offset_commit.v4.response import TxnOffsetCommitResponse as TxnOffsetCommitV4
from kio.schema.txn_offset_commit.v5.response import TxnOffsetCommitResponse as TxnOffsetCommitV5
from kio.schema.update_features.v0.response import UpdateFeaturesResponse as UpdateFeaturesV0
from kio.schema.update_features.v1.response import UpdateFeaturesResponse as UpdateFeaturesV1
from kio.schema.update_features.v2.response import UpdateFeaturesResponse as UpdateFeaturesV2
from kio.static.protocol import RequestPayload, ResponsePayload

from .apis import response_type
from .legacy_produce.v0 import ProduceResponse as ProduceV0
from .legacy_produce.v1 import ProduceResponse as ProduceV1
from .legacy_produce.v2 import ProduceResponse as ProduceV2
from .request_types import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    AlterShareGroupOffsetsRequest,
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteShareGroupOffsetsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeShareGroupOffsetsRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListPartitionReassignmentsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    UpdateFeaturesRequest,
)

AlterConfigsResponse: TypeAlias = AlterConfigsV0 | AlterConfigsV1 | AlterConfigsV2
ApiVersionsResponse: TypeAlias = ApiVersionsV0 | ApiVersionsV1 | ApiVersionsV2 | ApiVersionsV3 | ApiVersionsV4
ConsumerGroupDescribeResponse: TypeAlias = ConsumerGroupDescribeV0 | ConsumerGroupDescribeV1
ConsumerGroupHeartbeatResponse: TypeAlias = ConsumerGroupHeartbeatV0 | ConsumerGroupHeartbeatV1
CreatePartitionsResponse: TypeAlias = (
    CreatePartitionsV0 | CreatePartitionsV1 | CreatePartitionsV2 | CreatePartitionsV3
)
CreateTopicsResponse: TypeAlias = (
    CreateTopicsV2 | CreateTopicsV3 | CreateTopicsV4 | CreateTopicsV5 | CreateTopicsV6 | CreateTopicsV7
)
DeleteGroupsResponse: TypeAlias = DeleteGroupsV0 | DeleteGroupsV1 | DeleteGroupsV2
DeleteRecordsResponse: TypeAlias = DeleteRecordsV0 | DeleteRecordsV1 | DeleteRecordsV2
DeleteTopicsResponse: TypeAlias = (
    DeleteTopicsV1 | DeleteTopicsV2 | DeleteTopicsV3 | DeleteTopicsV4 | DeleteTopicsV5 | DeleteTopicsV6
)
DescribeClusterResponse: TypeAlias = DescribeClusterV0 | DescribeClusterV1 | DescribeClusterV2
DescribeConfigsResponse: TypeAlias = (
    DescribeConfigsV1 | DescribeConfigsV2 | DescribeConfigsV3 | DescribeConfigsV4
)
DescribeGroupsResponse: TypeAlias = (
    DescribeGroupsV0
    | DescribeGroupsV1
    | DescribeGroupsV2
    | DescribeGroupsV3
    | DescribeGroupsV4
    | DescribeGroupsV5
    | DescribeGroupsV6
)
FetchResponse: TypeAlias = (
    FetchV4
    | FetchV5
    | FetchV6
    | FetchV7
    | FetchV8
    | FetchV9
    | FetchV10
    | FetchV11
    | FetchV12
    | FetchV13
    | FetchV14
    | FetchV15
    | FetchV16
    | FetchV17
    | FetchV18
)
FindCoordinatorResponse: TypeAlias = (
    FindCoordinatorV0
    | FindCoordinatorV1
    | FindCoordinatorV2
    | FindCoordinatorV3
    | FindCoordinatorV4
    | FindCoordinatorV5
    | FindCoordinatorV6
)
HeartbeatResponse: TypeAlias = HeartbeatV0 | HeartbeatV1 | HeartbeatV2 | HeartbeatV3 | HeartbeatV4
IncrementalAlterConfigsResponse: TypeAlias = IncrementalAlterConfigsV0 | IncrementalAlterConfigsV1
InitProducerIdResponse: TypeAlias = (
    InitProducerIdV0
    | InitProducerIdV1
    | InitProducerIdV2
    | InitProducerIdV3
    | InitProducerIdV4
    | InitProducerIdV5
    | InitProducerIdV6
)
JoinGroupResponse: TypeAlias = (
    JoinGroupV0
    | JoinGroupV1
    | JoinGroupV2
    | JoinGroupV3
    | JoinGroupV4
    | JoinGroupV5
    | JoinGroupV6
    | JoinGroupV7
    | JoinGroupV8
    | JoinGroupV9
)
LeaveGroupResponse: TypeAlias = (
    LeaveGroupV0 | LeaveGroupV1 | LeaveGroupV2 | LeaveGroupV3 | LeaveGroupV4 | LeaveGroupV5
)
ListGroupsResponse: TypeAlias = (
    ListGroupsV0 | ListGroupsV1 | ListGroupsV2 | ListGroupsV3 | ListGroupsV4 | ListGroupsV5
)
ListOffsetsResponse: TypeAlias = (
    ListOffsetsV1
    | ListOffsetsV2
    | ListOffsetsV3
    | ListOffsetsV4
    | ListOffsetsV5
    | ListOffsetsV6
    | ListOffsetsV7
    | ListOffsetsV8
    | ListOffsetsV9
    | ListOffsetsV10
    | ListOffsetsV11
)
MetadataResponse: TypeAlias = (
    MetadataV0
    | MetadataV1
    | MetadataV2
    | MetadataV3
    | MetadataV4
    | MetadataV5
    | MetadataV6
    | MetadataV7
    | MetadataV8
    | MetadataV9
    | MetadataV10
    | MetadataV11
    | MetadataV12
    | MetadataV13
)
OffsetCommitResponse: TypeAlias = (
    OffsetCommitV2
    | OffsetCommitV3
    | OffsetCommitV4
    | OffsetCommitV5
    | OffsetCommitV6
    | OffsetCommitV7
    | OffsetCommitV8
    | OffsetCommitV9
    | OffsetCommitV10
)
OffsetDeleteResponse: TypeAlias = OffsetDeleteV0
OffsetFetchResponse: TypeAlias = (
    OffsetFetchV1
    | OffsetFetchV2
    | OffsetFetchV3
    | OffsetFetchV4
    | OffsetFetchV5
    | OffsetFetchV6
    | OffsetFetchV7
    | OffsetFetchV8
    | OffsetFetchV9
    | OffsetFetchV10
)
OffsetForLeaderEpochResponse: TypeAlias = (
    OffsetForLeaderEpochV2 | OffsetForLeaderEpochV3 | OffsetForLeaderEpochV4
)
ProduceResponse: TypeAlias = (
    ProduceV0
    | ProduceV1
    | ProduceV2
    | ProduceV3
    | ProduceV4
    | ProduceV5
    | ProduceV6
    | ProduceV7
    | ProduceV8
    | ProduceV9
    | ProduceV10
    | ProduceV11
    | ProduceV12
    | ProduceV13
)
SyncGroupResponse: TypeAlias = (
    SyncGroupV0 | SyncGroupV1 | SyncGroupV2 | SyncGroupV3 | SyncGroupV4 | SyncGroupV5
)
AlterReplicaLogDirsResponse: TypeAlias = AlterReplicaLogDirsV1 | AlterReplicaLogDirsV2
DescribeLogDirsResponse: TypeAlias = (
    DescribeLogDirsV1 | DescribeLogDirsV2 | DescribeLogDirsV3 | DescribeLogDirsV4 | DescribeLogDirsV5
)
ElectLeadersResponse: TypeAlias = ElectLeadersV0 | ElectLeadersV1 | ElectLeadersV2
AlterPartitionReassignmentsResponse: TypeAlias = AlterPartitionReassignmentsV0 | AlterPartitionReassignmentsV1
ListPartitionReassignmentsResponse: TypeAlias = ListPartitionReassignmentsV0
UpdateFeaturesResponse: TypeAlias = UpdateFeaturesV0 | UpdateFeaturesV1 | UpdateFeaturesV2
DescribeProducersResponse: TypeAlias = DescribeProducersV0
CreateAclsResponse: TypeAlias = CreateAclsV1 | CreateAclsV2 | CreateAclsV3
DescribeAclsResponse: TypeAlias = DescribeAclsV1 | DescribeAclsV2 | DescribeAclsV3
DeleteAclsResponse: TypeAlias = DeleteAclsV1 | DeleteAclsV2 | DeleteAclsV3
DescribeClientQuotasResponse: TypeAlias = DescribeClientQuotasV0 | DescribeClientQuotasV1
AlterClientQuotasResponse: TypeAlias = AlterClientQuotasV0 | AlterClientQuotasV1
AddPartitionsToTxnResponse: TypeAlias = (
    AddPartitionsToTxnV0
    | AddPartitionsToTxnV1
    | AddPartitionsToTxnV2
    | AddPartitionsToTxnV3
    | AddPartitionsToTxnV4
    | AddPartitionsToTxnV5
)
AddOffsetsToTxnResponse: TypeAlias = (
    AddOffsetsToTxnV0 | AddOffsetsToTxnV1 | AddOffsetsToTxnV2 | AddOffsetsToTxnV3 | AddOffsetsToTxnV4
)
EndTxnResponse: TypeAlias = EndTxnV0 | EndTxnV1 | EndTxnV2 | EndTxnV3 | EndTxnV4 | EndTxnV5
TxnOffsetCommitResponse: TypeAlias = (
    TxnOffsetCommitV0
    | TxnOffsetCommitV1
    | TxnOffsetCommitV2
    | TxnOffsetCommitV3
    | TxnOffsetCommitV4
    | TxnOffsetCommitV5
)
DescribeTransactionsResponse: TypeAlias = DescribeTransactionsV0
ListTransactionsResponse: TypeAlias = ListTransactionsV0 | ListTransactionsV1 | ListTransactionsV2
ShareFetchResponse: TypeAlias = ShareFetchV1 | ShareFetchV2
ShareAcknowledgeResponse: TypeAlias = ShareAcknowledgeV1 | ShareAcknowledgeV2
ShareGroupHeartbeatResponse: TypeAlias = ShareGroupHeartbeatV1
ShareGroupDescribeResponse: TypeAlias = ShareGroupDescribeV1
StreamsGroupHeartbeatResponse: TypeAlias = StreamsGroupHeartbeatV0
StreamsGroupDescribeResponse: TypeAlias = StreamsGroupDescribeV0
DescribeShareGroupOffsetsResponse: TypeAlias = DescribeShareGroupOffsetsV0 | DescribeShareGroupOffsetsV1
AlterShareGroupOffsetsResponse: TypeAlias = AlterShareGroupOffsetsV0
DeleteShareGroupOffsetsResponse: TypeAlias = DeleteShareGroupOffsetsV0
SaslHandshakeResponse: TypeAlias = SaslHandshakeV0 | SaslHandshakeV1
SaslAuthenticateResponse: TypeAlias = SaslAuthenticateV0 | SaslAuthenticateV1 | SaslAuthenticateV2
DescribeUserScramCredentialsResponse: TypeAlias = DescribeUserScramCredentialsV0
AlterUserScramCredentialsResponse: TypeAlias = AlterUserScramCredentialsV0


@overload
def response_for(request: AlterConfigsRequest) -> type[AlterConfigsResponse]: ...
@overload
def response_for(request: ApiVersionsRequest) -> type[ApiVersionsResponse]: ...
@overload
def response_for(request: ConsumerGroupDescribeRequest) -> type[ConsumerGroupDescribeResponse]: ...
@overload
def response_for(request: ConsumerGroupHeartbeatRequest) -> type[ConsumerGroupHeartbeatResponse]: ...
@overload
def response_for(request: CreatePartitionsRequest) -> type[CreatePartitionsResponse]: ...
@overload
def response_for(request: CreateTopicsRequest) -> type[CreateTopicsResponse]: ...
@overload
def response_for(request: DeleteGroupsRequest) -> type[DeleteGroupsResponse]: ...
@overload
def response_for(request: DeleteRecordsRequest) -> type[DeleteRecordsResponse]: ...
@overload
def response_for(request: DeleteTopicsRequest) -> type[DeleteTopicsResponse]: ...
@overload
def response_for(request: DescribeClusterRequest) -> type[DescribeClusterResponse]: ...
@overload
def response_for(request: DescribeConfigsRequest) -> type[DescribeConfigsResponse]: ...
@overload
def response_for(request: DescribeGroupsRequest) -> type[DescribeGroupsResponse]: ...
@overload
def response_for(request: FetchRequest) -> type[FetchResponse]: ...
@overload
def response_for(request: FindCoordinatorRequest) -> type[FindCoordinatorResponse]: ...
@overload
def response_for(request: HeartbeatRequest) -> type[HeartbeatResponse]: ...
@overload
def response_for(request: IncrementalAlterConfigsRequest) -> type[IncrementalAlterConfigsResponse]: ...
@overload
def response_for(request: InitProducerIdRequest) -> type[InitProducerIdResponse]: ...
@overload
def response_for(request: JoinGroupRequest) -> type[JoinGroupResponse]: ...
@overload
def response_for(request: LeaveGroupRequest) -> type[LeaveGroupResponse]: ...
@overload
def response_for(request: ListGroupsRequest) -> type[ListGroupsResponse]: ...
@overload
def response_for(request: ListOffsetsRequest) -> type[ListOffsetsResponse]: ...
@overload
def response_for(request: MetadataRequest) -> type[MetadataResponse]: ...
@overload
def response_for(request: OffsetCommitRequest) -> type[OffsetCommitResponse]: ...
@overload
def response_for(request: OffsetDeleteRequest) -> type[OffsetDeleteResponse]: ...
@overload
def response_for(request: OffsetFetchRequest) -> type[OffsetFetchResponse]: ...
@overload
def response_for(request: OffsetForLeaderEpochRequest) -> type[OffsetForLeaderEpochResponse]: ...
@overload
def response_for(request: ProduceRequest) -> type[ProduceResponse]: ...
@overload
def response_for(request: SyncGroupRequest) -> type[SyncGroupResponse]: ...
@overload
def response_for(request: AlterReplicaLogDirsRequest) -> type[AlterReplicaLogDirsResponse]: ...
@overload
def response_for(request: DescribeLogDirsRequest) -> type[DescribeLogDirsResponse]: ...
@overload
def response_for(request: ElectLeadersRequest) -> type[ElectLeadersResponse]: ...
@overload
def response_for(
    request: AlterPartitionReassignmentsRequest,
) -> type[AlterPartitionReassignmentsResponse]: ...
@overload
def response_for(request: ListPartitionReassignmentsRequest) -> type[ListPartitionReassignmentsResponse]: ...
@overload
def response_for(request: UpdateFeaturesRequest) -> type[UpdateFeaturesResponse]: ...
@overload
def response_for(request: DescribeProducersRequest) -> type[DescribeProducersResponse]: ...
@overload
def response_for(request: CreateAclsRequest) -> type[CreateAclsResponse]: ...
@overload
def response_for(request: DescribeAclsRequest) -> type[DescribeAclsResponse]: ...
@overload
def response_for(request: DeleteAclsRequest) -> type[DeleteAclsResponse]: ...
@overload
def response_for(request: DescribeClientQuotasRequest) -> type[DescribeClientQuotasResponse]: ...
@overload
def response_for(request: AlterClientQuotasRequest) -> type[AlterClientQuotasResponse]: ...
@overload
def response_for(request: AddPartitionsToTxnRequest) -> type[AddPartitionsToTxnResponse]: ...
@overload
def response_for(request: AddOffsetsToTxnRequest) -> type[AddOffsetsToTxnResponse]: ...
@overload
def response_for(request: EndTxnRequest) -> type[EndTxnResponse]: ...
@overload
def response_for(request: TxnOffsetCommitRequest) -> type[TxnOffsetCommitResponse]: ...
@overload
def response_for(request: DescribeTransactionsRequest) -> type[DescribeTransactionsResponse]: ...
@overload
def response_for(request: ListTransactionsRequest) -> type[ListTransactionsResponse]: ...
@overload
def response_for(request: ShareFetchRequest) -> type[ShareFetchResponse]: ...
@overload
def response_for(request: ShareAcknowledgeRequest) -> type[ShareAcknowledgeResponse]: ...
@overload
def response_for(request: ShareGroupHeartbeatRequest) -> type[ShareGroupHeartbeatResponse]: ...
@overload
def response_for(request: ShareGroupDescribeRequest) -> type[ShareGroupDescribeResponse]: ...
@overload
def response_for(request: StreamsGroupHeartbeatRequest) -> type[StreamsGroupHeartbeatResponse]: ...
@overload
def response_for(request: StreamsGroupDescribeRequest) -> type[StreamsGroupDescribeResponse]: ...
@overload
def response_for(request: DescribeShareGroupOffsetsRequest) -> type[DescribeShareGroupOffsetsResponse]: ...
@overload
def response_for(request: AlterShareGroupOffsetsRequest) -> type[AlterShareGroupOffsetsResponse]: ...
@overload
def response_for(request: DeleteShareGroupOffsetsRequest) -> type[DeleteShareGroupOffsetsResponse]: ...
@overload
def response_for(request: SaslHandshakeRequest) -> type[SaslHandshakeResponse]: ...
@overload
def response_for(request: SaslAuthenticateRequest) -> type[SaslAuthenticateResponse]: ...
@overload
def response_for(
    request: DescribeUserScramCredentialsRequest,
) -> type[DescribeUserScramCredentialsResponse]: ...
@overload
def response_for(request: AlterUserScramCredentialsRequest) -> type[AlterUserScramCredentialsResponse]: ...


def response_for(request: RequestPayload) -> type[ResponsePayload]:
    """The response class of the request's API and version."""
    return response_type(request.__api_key__, request.__version__)
